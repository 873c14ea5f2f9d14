//! The app database's migrations, embedded in the binary from the repository's
//! `migrations/` folder (sqlx's `migrate!` macro needs the `macros` feature and a build-time
//! database; we embed the files ourselves and hand them to sqlx's runtime migrator).
//!
//! Invariant: [`MIGRATIONS`] lists every file of `migrations/` in order; a unit test checks
//! the folder against this list so a new file cannot be forgotten.

use std::borrow::Cow;

use sqlx::SqlitePool;
use sqlx::migrate::{Migration, MigrationType, Migrator};

/// `(version, description, sql)`, in the order they apply.
pub(crate) const MIGRATIONS: &[(i64, &str, &str)] = &[
    (1, "foundation", include_str!("../../../migrations/0001_foundation.sql")),
    (2, "conversations_and_agent_tools", include_str!("../../../migrations/0002_conversations_and_agent_tools.sql")),
    (3, "ui_components", include_str!("../../../migrations/0003_ui_components.sql")),
    (4, "marketplace", include_str!("../../../migrations/0004_marketplace.sql")),
    (5, "execution_tool_version", include_str!("../../../migrations/0005_execution_tool_version.sql")),
    (6, "typed_events_and_run_leases", include_str!("../../../migrations/0006_typed_events_and_run_leases.sql")),
    (7, "sessions_and_provenance", include_str!("../../../migrations/0007_sessions_and_provenance.sql")),
    (8, "tool_policies_and_approvals", include_str!("../../../migrations/0008_tool_policies_and_approvals.sql")),
    (9, "agent_tool_settings", include_str!("../../../migrations/0009_agent_tool_settings.sql")),
    (10, "memory", include_str!("../../../migrations/0010_memory.sql")),
    (11, "provider_connections", include_str!("../../../migrations/0011_provider_connections.sql")),
    (12, "mcp_tool_kind", include_str!("../../../migrations/0012_mcp_tool_kind.sql")),
    (
        13,
        "channels_notifications_schedules",
        include_str!("../../../migrations/0013_channels_notifications_schedules.sql"),
    ),
    // 14 is taken by work on another branch.
    (15, "memory_vectors", include_str!("../../../migrations/0015_memory_vectors.sql")),
    (16, "telegram_outbox", include_str!("../../../migrations/0016_telegram_outbox.sql")),
    (17, "skills", include_str!("../../../migrations/0017_skills.sql")),
    (18, "db_notes", include_str!("../../../migrations/0018_db_notes.sql")),
    (19, "learning", include_str!("../../../migrations/0019_learning.sql")),
    // 20, 21 and 25 are taken by work on other branches.
    (22, "usage_ledger", include_str!("../../../migrations/0022_usage_ledger.sql")),
    (23, "prices_and_budgets", include_str!("../../../migrations/0023_prices_and_budgets.sql")),
    (24, "execution_outside_origin", include_str!("../../../migrations/0024_execution_outside_origin.sql")),
    (26, "push_subscriptions", include_str!("../../../migrations/0026_push_subscriptions.sql")),
    (27, "usage_totals", include_str!("../../../migrations/0027_usage_totals.sql")),
    (28, "model_profile_overrides", include_str!("../../../migrations/0028_model_profile_overrides.sql")),
    (29, "usage_leases", include_str!("../../../migrations/0029_usage_leases.sql")),
    (30, "learned_skills", include_str!("../../../migrations/0030_learned_skills.sql")),
];

pub(crate) async fn run(pool: &SqlitePool) -> Result<(), sqlx::migrate::MigrateError> {
    let migrations: Vec<Migration> = MIGRATIONS
        .iter()
        .map(|(version, description, sql)| {
            let sql = sqlx::SqlSafeStr::into_sql_str(*sql);
            Migration::new(*version, Cow::Borrowed(*description), MigrationType::Simple, sql, false)
        })
        .collect();
    let migrator = Migrator { migrations: Cow::Owned(migrations), ..Migrator::DEFAULT };
    migrator.run(pool).await
}

#[cfg(test)]
mod tests {
    use std::str::FromStr;

    use sqlx::sqlite::{SqliteConnectOptions, SqlitePoolOptions};

    use super::*;

    /// A database in `dir` with the migrations before `version` applied, foreign keys on.
    async fn migrated_before(dir: &std::path::Path, version: i64) -> SqlitePool {
        let options = SqliteConnectOptions::from_str("sqlite:")
            .unwrap()
            .filename(dir.join("old.db"))
            .create_if_missing(true)
            .foreign_keys(true);
        let pool = SqlitePoolOptions::new().max_connections(1).connect_with(options).await.unwrap();
        let before: Vec<Migration> = MIGRATIONS
            .iter()
            .filter(|(number, _, _)| *number < version)
            .map(|(number, description, sql)| {
                let sql = sqlx::SqlSafeStr::into_sql_str(*sql);
                Migration::new(*number, Cow::Borrowed(*description), MigrationType::Simple, sql, false)
            })
            .collect();
        Migrator { migrations: Cow::Owned(before), ..Migrator::DEFAULT }.run(&pool).await.unwrap();
        pool
    }

    /// Migration 0017 rebuilds `market_listings` (to allow the kind `skill`) under deferred
    /// foreign keys: a database that already has listings and versions keeps them, with their
    /// ids, and the versions still reference them.
    #[tokio::test]
    async fn the_market_rebuild_keeps_existing_listings_and_their_versions() {
        let dir = tempfile::tempdir().unwrap();
        let pool = migrated_before(dir.path(), 17).await;
        sqlx::query("INSERT INTO market_listings (id, kind, name, publisher_agent) VALUES (7, 'tool', 'shout', 'a')")
            .execute(&pool)
            .await
            .unwrap();
        sqlx::query(
            "INSERT INTO market_listing_versions (listing_id, version, description, bundle, hash, publisher_agent, source) \
             VALUES (7, 1, 'Shouts.', '{}', 'h', 'a', 'agent')",
        )
        .execute(&pool)
        .await
        .unwrap();

        run(&pool).await.unwrap();
        let listings: Vec<(i64, String, String)> =
            sqlx::query_as("SELECT id, kind, origin FROM market_listings").fetch_all(&pool).await.unwrap();
        assert_eq!(listings, [(7, "tool".to_owned(), "local".to_owned())]);
        let dangling: Vec<(String,)> =
            sqlx::query_as("SELECT \"table\" FROM pragma_foreign_key_check").fetch_all(&pool).await.unwrap();
        assert!(dangling.is_empty(), "{dangling:?}");
        sqlx::query("INSERT INTO market_listings (kind, name, publisher_agent) VALUES ('skill', 'pdf', 'a')")
            .execute(&pool)
            .await
            .unwrap();
        // Foreign keys are enforced again after the migration.
        let orphan = sqlx::query(
            "INSERT INTO market_listing_versions (listing_id, version, description, bundle, hash, publisher_agent, source) \
             VALUES (99, 1, 'x', '{}', 'h', 'a', 'agent')",
        )
        .execute(&pool)
        .await;
        assert!(orphan.is_err());
    }

    /// Migration 0030 rebuilds `learned_items` (to allow the kind `skill`) the same way: an
    /// item and its recorded changes are kept, with their ids.
    #[tokio::test]
    async fn the_learned_items_rebuild_keeps_items_and_their_changes() {
        let dir = tempfile::tempdir().unwrap();
        let pool = migrated_before(dir.path(), 30).await;
        for statement in [
            "INSERT INTO agents (id, name) VALUES ('a', 'A')",
            "INSERT INTO learned_items (id, agent_id, kind, trigger, text, source_runs, read_outside, status) \
             VALUES (5, 'a', 'exemplar', 't', 'x', '[]', 0, 'live')",
            "INSERT INTO learned_item_changes (item_id, version, status, author, reason) \
             VALUES (5, 1, 'live', 'learning', 'r')",
        ] {
            sqlx::query(statement).execute(&pool).await.unwrap();
        }
        let skill_before = sqlx::query(
            "INSERT INTO learned_items (agent_id, kind, trigger, text, source_runs, read_outside, status) \
             VALUES ('a', 'skill', 't', 'y', '[]', 0, 'candidate')",
        )
        .execute(&pool)
        .await;
        assert!(skill_before.is_err(), "no skill kind before 0030");

        run(&pool).await.unwrap();
        let items: Vec<(i64, String)> =
            sqlx::query_as("SELECT id, kind FROM learned_items").fetch_all(&pool).await.unwrap();
        assert_eq!(items, [(5, "exemplar".to_owned())]);
        let dangling: Vec<(String,)> =
            sqlx::query_as("SELECT \"table\" FROM pragma_foreign_key_check").fetch_all(&pool).await.unwrap();
        assert!(dangling.is_empty(), "{dangling:?}");
        sqlx::query(
            "INSERT INTO learned_items (agent_id, kind, trigger, text, source_runs, read_outside, status) \
             VALUES ('a', 'skill', 't', 'y', '[]', 0, 'candidate')",
        )
        .execute(&pool)
        .await
        .unwrap();
    }
}
