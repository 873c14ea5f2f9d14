//! The marketplace's listings: published bundles of agent-made tools and components, one
//! append-only version per publish, each pinned by the SHA-256 of its canonical JSON. What a
//! bundle must contain and how it is checked is the tool layer's business; this is storage
//! and the usage statistics drawn from `tool_executions`.
//!
//! Provenance is what this installation knows: a version published here records this
//! installation's id and the agent whose tool it is (published by that agent or by the admin);
//! an imported one records neither
//! (`source_installation` NULL, publisher empty) because a file's claims cannot be checked.
//! An import never adds a version to a listing published here unless the caller says so
//! ([`PublishSource::Import`]'s `into_local_listing`), and nothing local is ever published
//! onto an imported listing.

use serde::Serialize;
use serde_json::Value;

use crate::catalog::parse_json;
use crate::limits::{check_name, check_size};
use crate::{Store, StoreError};

/// Who adds a listing version, which decides what the store records and allows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PublishSource<'a> {
    /// An agent publishing its own tool or component.
    Agent(&'a str),
    /// The admin publishing an agent's tool or component.
    Admin(&'a str),
    /// A bundle file. `into_local_listing`: the person asked for it to become a version of
    /// the listing of the same name published here.
    Import { into_local_listing: bool },
}

impl<'a> PublishSource<'a> {
    fn source(self) -> &'static str {
        match self {
            PublishSource::Agent(_) => "agent",
            PublishSource::Admin(_) => "admin",
            PublishSource::Import { .. } => "import",
        }
    }

    /// The agent whose tool is published; empty for an import (nobody here published it).
    fn publisher(self) -> &'a str {
        match self {
            PublishSource::Agent(agent) | PublishSource::Admin(agent) => agent,
            PublishSource::Import { .. } => "",
        }
    }
}

/// One page of listings and how many match in all.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ListingPage {
    pub listings: Vec<Listing>,
    pub total: i64,
}

/// A listing with its latest version's description.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Listing {
    pub id: i64,
    /// tool or component.
    pub kind: String,
    pub name: String,
    /// The agent that published it here; empty for an imported listing.
    pub publisher_agent: String,
    pub description: String,
    pub latest_version: i64,
    pub latest_hash: String,
    pub created_at: String,
    /// `local` (published on this installation) or `import` (made from a bundle file).
    pub origin: String,
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
    /// The installation it was published on (this one's id); None when imported from a file.
    pub source_installation: Option<String>,
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

/// version, description, bundle, hash, publisher, source, source installation, time.
type ListingVersionRow = (i64, String, String, String, String, String, Option<String>, String);

type ListingRow = (i64, String, String, String, String, i64, String, String, String);

const LISTING_SELECT: &str = "SELECT l.id, l.kind, l.name, l.publisher_agent, v.description, v.version, v.hash, l.created_at, l.origin \
     FROM market_listings l JOIN market_listing_versions v ON v.listing_id = l.id \
     AND v.version = (SELECT MAX(version) FROM market_listing_versions WHERE listing_id = l.id)";

fn listing_from_row(row: ListingRow) -> Listing {
    let (id, kind, name, publisher_agent, description, latest_version, latest_hash, created_at, origin) = row;
    Listing { id, kind, name, publisher_agent, description, latest_version, latest_hash, created_at, origin }
}

impl Store {
    /// Adds a version to the listing `(kind, name)`, creating the listing on first publish.
    /// Publishing the same content (same hash) as the latest version returns that version.
    /// Refuses a listing of another agent, a local publish onto an imported listing and an
    /// import onto a local listing unless asked for; caps the name and description.
    pub async fn publish_listing_version(
        &self,
        kind: &str,
        name: &str,
        description: &str,
        bundle: &str,
        hash: &str,
        source: PublishSource<'_>,
    ) -> Result<(Listing, i64), StoreError> {
        check_name("the listing's name", name, &self.text_limits)?;
        check_size(
            "the listing's description",
            description.len() as u64,
            self.text_limits.max_description_bytes,
            "max_description_bytes",
        )?;
        let mut transaction = self.begin_write().await?;
        let existing: Option<(i64, String, String)> =
            sqlx::query_as("SELECT id, publisher_agent, origin FROM market_listings WHERE kind = ? AND name = ?")
                .bind(kind)
                .bind(name)
                .fetch_optional(&mut *transaction)
                .await?;
        let listing_id = match (existing, source) {
            (Some((id, _, origin)), PublishSource::Import { into_local_listing }) => {
                if origin == "local" && !into_local_listing {
                    return Err(StoreError::InvalidEdit(format!(
                        "a {kind} listing named {name:?} was published on this installation; an import adds a \
                         version to it only when asked to (into_local_listing), otherwise rename the bundle"
                    )));
                }
                id
            }
            (Some((_, _, origin)), _) if origin == "import" => {
                return Err(StoreError::InvalidEdit(format!(
                    "the {kind} listing {name:?} was imported from a file; publish under another name"
                )));
            }
            (Some((_, owner, _)), _) if owner != source.publisher() => {
                return Err(StoreError::InvalidEdit(format!(
                    "the {kind} listing {name:?} belongs to agent {owner:?}; publish under another name"
                )));
            }
            (Some((id, _, _)), _) => id,
            (None, _) => {
                let origin = if matches!(source, PublishSource::Import { .. }) { "import" } else { "local" };
                let (id,): (i64,) = sqlx::query_as(
                    "INSERT INTO market_listings (kind, name, publisher_agent, origin) VALUES (?, ?, ?, ?) RETURNING id",
                )
                .bind(kind)
                .bind(name)
                .bind(source.publisher())
                .bind(origin)
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
                let installation = match source {
                    PublishSource::Import { .. } => None,
                    PublishSource::Agent(_) | PublishSource::Admin(_) => Some(
                        sqlx::query_as::<_, (String,)>("SELECT id FROM installation")
                            .fetch_one(&mut *transaction)
                            .await?
                            .0,
                    ),
                };
                sqlx::query(
                    "INSERT INTO market_listing_versions \
                     (listing_id, version, description, bundle, hash, publisher_agent, source, source_installation) \
                     VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                )
                .bind(listing_id)
                .bind(version)
                .bind(description)
                .bind(bundle)
                .bind(hash)
                .bind(source.publisher())
                .bind(source.source())
                .bind(installation)
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

    /// Listings whose name or description contains `query` (case-insensitive), by name: at
    /// most `limit` of them after skipping `offset`, with the number that match in all.
    pub async fn list_listings(&self, query: Option<&str>, limit: u32, offset: u64) -> Result<ListingPage, StoreError> {
        let query = query.unwrap_or("").to_lowercase();
        const MATCHES: &str = "WHERE instr(lower(l.name), ?1) > 0 OR instr(lower(v.description), ?1) > 0";
        let rows: Vec<ListingRow> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "{LISTING_SELECT} {MATCHES} ORDER BY l.name, l.kind LIMIT ?2 OFFSET ?3"
        )))
        .bind(&query)
        .bind(i64::from(limit))
        .bind(i64::try_from(offset).unwrap_or(i64::MAX))
        .fetch_all(&self.reader)
        .await?;
        let (total,): (i64,) =
            sqlx::query_as(sqlx::AssertSqlSafe(format!("SELECT COUNT(*) FROM ({LISTING_SELECT} {MATCHES})")))
                .bind(&query)
                .fetch_one(&self.reader)
                .await?;
        Ok(ListingPage { listings: rows.into_iter().map(listing_from_row).collect(), total })
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
        let rows: Vec<ListingVersionRow> = sqlx::query_as(
            "SELECT version, description, bundle, hash, publisher_agent, source, source_installation, created_at \
             FROM market_listing_versions \
             WHERE listing_id = ? ORDER BY version DESC",
        )
        .bind(listing_id)
        .fetch_all(&self.reader)
        .await?;
        rows.into_iter()
            .map(|(version, description, bundle, hash, publisher_agent, source, source_installation, created_at)| {
                Ok(ListingVersion {
                    version,
                    description,
                    bundle: parse_json(&bundle)?,
                    hash,
                    publisher_agent,
                    source,
                    source_installation,
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
