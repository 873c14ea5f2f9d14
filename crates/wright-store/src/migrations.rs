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
    (26, "push_subscriptions", include_str!("../../../migrations/0026_push_subscriptions.sql")),
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
