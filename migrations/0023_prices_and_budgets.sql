-- Prices and budgets set on the Settings page (issue 34).
-- A price per connection and model, in dollars per million tokens; without a row the
-- built-in defaults apply (hosted vendors' list prices; local servers cost 0).
CREATE TABLE model_prices (
    connection            TEXT NOT NULL,
    model                 TEXT NOT NULL,
    input_per_mtok        REAL NOT NULL CHECK (input_per_mtok >= 0),
    cached_input_per_mtok REAL NOT NULL CHECK (cached_input_per_mtok >= 0),
    output_per_mtok       REAL NOT NULL CHECK (output_per_mtok >= 0),
    updated_at            INTEGER NOT NULL,
    PRIMARY KEY (connection, model)
) STRICT;

-- Budgets set on the Settings page; they take the place of config.toml's for their scope
-- (`all`, or `agent:<id>`). A NULL limit is no limit.
CREATE TABLE budgets (
    scope             TEXT PRIMARY KEY,
    tokens_per_day    INTEGER CHECK (tokens_per_day >= 0),
    tokens_per_month  INTEGER CHECK (tokens_per_month >= 0),
    usd_per_day       REAL CHECK (usd_per_day >= 0),
    usd_per_month     REAL CHECK (usd_per_month >= 0),
    notify_at_percent INTEGER CHECK (notify_at_percent BETWEEN 1 AND 100),
    updated_at        INTEGER NOT NULL
) STRICT;

-- A scheduled time not run because a budget was spent: `skipped_budget`. SQLite cannot change a
-- CHECK, so the table is rebuilt as it was with the new outcome (nothing references it).
CREATE TABLE schedule_runs_new (
    id              INTEGER PRIMARY KEY,
    schedule_id     INTEGER NOT NULL REFERENCES schedules(id),
    due_at          INTEGER NOT NULL,
    fired_at        INTEGER NOT NULL,
    outcome         TEXT NOT NULL
        CHECK (outcome IN ('started', 'finished', 'failed', 'missed', 'skipped_limit', 'skipped_budget')),
    missed_count    INTEGER NOT NULL DEFAULT 0,
    conversation_id TEXT
) STRICT;
INSERT INTO schedule_runs_new (id, schedule_id, due_at, fired_at, outcome, missed_count, conversation_id)
    SELECT id, schedule_id, due_at, fired_at, outcome, missed_count, conversation_id FROM schedule_runs;
DROP TABLE schedule_runs;
ALTER TABLE schedule_runs_new RENAME TO schedule_runs;
CREATE INDEX schedule_runs_open ON schedule_runs (id) WHERE outcome = 'started';
CREATE INDEX schedule_runs_by_schedule ON schedule_runs (schedule_id, id);
CREATE INDEX schedule_runs_by_time ON schedule_runs (fired_at);

-- Notifications of budgets (a soft threshold reached, a budget spent): source `budget`.
-- Rebuilt as it was with the new source, for the same reason.
CREATE TABLE notifications_new (
    id              INTEGER PRIMARY KEY,
    agent_id        TEXT NOT NULL REFERENCES agents(id),
    source          TEXT NOT NULL CHECK (source IN ('agent', 'schedule', 'budget')),
    title           TEXT NOT NULL,
    text            TEXT NOT NULL,
    conversation_id TEXT,
    schedule_id     INTEGER,
    created_at      INTEGER NOT NULL,
    read_at         INTEGER,
    telegram        TEXT NOT NULL DEFAULT 'pending' CHECK (telegram IN ('pending', 'sent', 'failed', 'skipped'))
) STRICT;
INSERT INTO notifications_new (id, agent_id, source, title, text, conversation_id, schedule_id, created_at, read_at,
        telegram)
    SELECT id, agent_id, source, title, text, conversation_id, schedule_id, created_at, read_at, telegram
    FROM notifications;
DROP TABLE notifications;
ALTER TABLE notifications_new RENAME TO notifications;
CREATE INDEX notifications_by_agent ON notifications (agent_id, id);
CREATE INDEX notifications_by_agent_source_time ON notifications (agent_id, source, created_at);
CREATE INDEX notifications_for_telegram ON notifications (id) WHERE telegram = 'pending';
