//! The marketplace's listings: published bundles of agent-made tools and components, one
//! append-only version per publish, each pinned by the SHA-256 of its canonical JSON. What a
//! bundle must contain and how it is checked is the tool layer's business; this is storage
//! and the usage statistics drawn from `tool_executions`.

use serde::Serialize;
use serde_json::Value;

use crate::catalog::parse_json;
use crate::{Store, StoreError};

/// A listing with its latest version's description.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Listing {
    pub id: i64,
    /// tool or component.
    pub kind: String,
    pub name: String,
    pub publisher_agent: String,
    pub description: String,
    pub latest_version: i64,
    pub latest_hash: String,
    pub created_at: String,
}

/// One published version.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ListingVersion {
    pub version: i64,
    pub description: String,
    pub bundle: Value,
    pub hash: String,
    pub publisher_agent: String,
    /// Where it came from: `agent`, `admin` or `import`.
    pub source: String,
    pub created_at: String,
}

/// How a published tool fares where it runs: the publisher's own copy and every installed one.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ListingStats {
    pub calls: i64,
    /// Successful calls / calls, 0 when there were none.
    pub success_rate: f64,
    pub median_duration_us: Option<i64>,
    /// The error categories of the latest failures, newest first (at most 10).
    pub recent_error_categories: Vec<String>,
}

type ListingRow = (i64, String, String, String, String, i64, String, String);

const LISTING_SELECT: &str = "SELECT l.id, l.kind, l.name, l.publisher_agent, v.description, v.version, v.hash, l.created_at \
     FROM market_listings l JOIN market_listing_versions v ON v.listing_id = l.id \
     AND v.version = (SELECT MAX(version) FROM market_listing_versions WHERE listing_id = l.id)";

fn listing_from_row(row: ListingRow) -> Listing {
    let (id, kind, name, publisher_agent, description, latest_version, latest_hash, created_at) = row;
    Listing { id, kind, name, publisher_agent, description, latest_version, latest_hash, created_at }
}

impl Store {
    /// Adds a version to the listing `(kind, name)`, creating the listing on first publish.
    /// Publishing the same content (same hash) as the latest version returns that version.
    /// Refuses when the listing belongs to another agent.
    #[allow(clippy::too_many_arguments, reason = "one row's worth of columns")]
    pub async fn publish_listing_version(
        &self,
        kind: &str,
        name: &str,
        description: &str,
        bundle: &str,
        hash: &str,
        publisher_agent: &str,
        source: &str,
    ) -> Result<(Listing, i64), StoreError> {
        let mut transaction = self.begin_write().await?;
        let existing: Option<(i64, String)> =
            sqlx::query_as("SELECT id, publisher_agent FROM market_listings WHERE kind = ? AND name = ?")
                .bind(kind)
                .bind(name)
                .fetch_optional(&mut *transaction)
                .await?;
        let listing_id = match existing {
            Some((_, owner)) if owner != publisher_agent && source != "import" => {
                return Err(StoreError::InvalidEdit(format!(
                    "the {kind} listing {name:?} belongs to agent {owner:?}; publish under another name"
                )));
            }
            Some((id, _)) => id,
            None => {
                let (id,): (i64,) = sqlx::query_as(
                    "INSERT INTO market_listings (kind, name, publisher_agent) VALUES (?, ?, ?) RETURNING id",
                )
                .bind(kind)
                .bind(name)
                .bind(publisher_agent)
                .fetch_one(&mut *transaction)
                .await?;
                id
            }
        };
        let latest: Option<(i64, String)> = sqlx::query_as(
            "SELECT version, hash FROM market_listing_versions WHERE listing_id = ? ORDER BY version DESC LIMIT 1",
        )
        .bind(listing_id)
        .fetch_optional(&mut *transaction)
        .await?;
        let version = match latest {
            Some((version, latest_hash)) if latest_hash == hash => version,
            latest => {
                let version = latest.map_or(1, |(version, _)| version + 1);
                sqlx::query(
                    "INSERT INTO market_listing_versions (listing_id, version, description, bundle, hash, publisher_agent, source) \
                     VALUES (?, ?, ?, ?, ?, ?, ?)",
                )
                .bind(listing_id)
                .bind(version)
                .bind(description)
                .bind(bundle)
                .bind(hash)
                .bind(publisher_agent)
                .bind(source)
                .execute(&mut *transaction)
                .await?;
                version
            }
        };
        transaction.commit().await?;
        let listing = self
            .listing(kind, name)
            .await?
            .ok_or_else(|| StoreError::ItemNotFound { kind: "listing", name: name.to_owned() })?;
        Ok((listing, version))
    }

    /// Listings whose name or description contains `query` (case-insensitive), by name.
    pub async fn list_listings(&self, query: Option<&str>) -> Result<Vec<Listing>, StoreError> {
        let query = query.unwrap_or("").to_lowercase();
        let rows: Vec<ListingRow> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "{LISTING_SELECT} WHERE instr(lower(l.name), ?1) > 0 OR instr(lower(v.description), ?1) > 0 ORDER BY l.name, l.kind"
        )))
        .bind(&query)
        .fetch_all(&self.reader)
        .await?;
        Ok(rows.into_iter().map(listing_from_row).collect())
    }

    pub async fn listing(&self, kind: &str, name: &str) -> Result<Option<Listing>, StoreError> {
        let row: Option<ListingRow> =
            sqlx::query_as(sqlx::AssertSqlSafe(format!("{LISTING_SELECT} WHERE l.kind = ? AND l.name = ?")))
                .bind(kind)
                .bind(name)
                .fetch_optional(&self.reader)
                .await?;
        Ok(row.map(listing_from_row))
    }

    /// Every version of a listing, newest first.
    pub async fn listing_versions(&self, listing_id: i64) -> Result<Vec<ListingVersion>, StoreError> {
        let rows: Vec<(i64, String, String, String, String, String, String)> = sqlx::query_as(
            "SELECT version, description, bundle, hash, publisher_agent, source, created_at FROM market_listing_versions \
             WHERE listing_id = ? ORDER BY version DESC",
        )
        .bind(listing_id)
        .fetch_all(&self.reader)
        .await?;
        rows.into_iter()
            .map(|(version, description, bundle, hash, publisher_agent, source, created_at)| {
                Ok(ListingVersion {
                    version,
                    description,
                    bundle: parse_json(&bundle)?,
                    hash,
                    publisher_agent,
                    source,
                    created_at,
                })
            })
            .collect()
    }

    /// Usage of a tool listing: its publisher's copy plus every copy installed from it.
    pub async fn listing_stats(&self, listing: &Listing) -> Result<ListingStats, StoreError> {
        let rows: Vec<(i64, i64, Option<String>)> = sqlx::query_as(
            "SELECT e.success, e.duration_us, e.error_category FROM tool_executions e \
             WHERE (e.agent_id = ?1 AND e.tool_name = ?2) OR EXISTS (SELECT 1 FROM agent_tools t \
               WHERE t.agent_id = e.agent_id AND t.name = e.tool_name AND t.deleted_at IS NULL \
               AND json_extract(t.provenance, '$.listing') = ?2 AND json_extract(t.provenance, '$.kind') = ?3) \
             ORDER BY e.id DESC",
        )
        .bind(&listing.publisher_agent)
        .bind(&listing.name)
        .bind(&listing.kind)
        .fetch_all(&self.reader)
        .await?;
        let calls = rows.len() as i64;
        let successes = rows.iter().filter(|(success, _, _)| *success != 0).count() as i64;
        let mut durations: Vec<i64> = rows.iter().map(|(_, duration, _)| *duration).collect();
        durations.sort_unstable();
        Ok(ListingStats {
            calls,
            success_rate: if calls == 0 { 0.0 } else { successes as f64 / calls as f64 },
            median_duration_us: durations.get(durations.len() / 2).copied(),
            recent_error_categories: rows.iter().filter_map(|(_, _, category)| category.clone()).take(10).collect(),
        })
    }
}
