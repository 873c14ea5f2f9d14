-- Channels (Telegram), notifications and schedules (issue 19).
-- Times in these tables are milliseconds since the epoch from the store's clock (injectable in
-- tests), not SQLite's `now`: they decide behaviour (when a schedule is due, the notify limit).

-- Where a channel's poller stopped: the next update to ask for. Written after each update is
-- handled, so a restart neither loses an update nor handles one twice (at most the one in hand).
CREATE TABLE channel_cursors (
    channel  TEXT PRIMARY KEY NOT NULL CHECK (channel IN ('telegram')),
    position INTEGER NOT NULL
) STRICT;

-- A chat of a channel and the conversation it talks to now (`/newsession` moves it). No
-- foreign key on the conversation: the person may delete it, and the next message opens a new one.
CREATE TABLE channel_chats (
    channel         TEXT NOT NULL CHECK (channel IN ('telegram')),
    chat_id         TEXT NOT NULL,
    user_id         TEXT NOT NULL,
    agent_id        TEXT NOT NULL REFERENCES agents(id),
    conversation_id TEXT,
    created_at      INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL,
    PRIMARY KEY (channel, chat_id)
) STRICT;

-- Messages to the person outside a run: the agent's `notify`, a schedule's result or a missed
-- schedule. Also the outbox of channels: `telegram` says whether it still has to go there.
CREATE TABLE notifications (
    id              INTEGER PRIMARY KEY,
    agent_id        TEXT NOT NULL REFERENCES agents(id),
    source          TEXT NOT NULL CHECK (source IN ('agent', 'schedule')),
    title           TEXT NOT NULL,
    text            TEXT NOT NULL,
    conversation_id TEXT,
    schedule_id     INTEGER,
    created_at      INTEGER NOT NULL,
    read_at         INTEGER,
    telegram        TEXT NOT NULL DEFAULT 'pending' CHECK (telegram IN ('pending', 'sent', 'failed', 'skipped'))
) STRICT;

CREATE INDEX notifications_by_agent ON notifications (agent_id, id);
CREATE INDEX notifications_by_agent_source_time ON notifications (agent_id, source, created_at);
CREATE INDEX notifications_for_telegram ON notifications (id) WHERE telegram = 'pending';

-- What an agent (or the person) asked to run later: a cron expression in a time zone, or one
-- time. `next_run_at` is when it is due next; NULL once nothing more is due.
CREATE TABLE schedules (
    id              INTEGER PRIMARY KEY,
    agent_id        TEXT NOT NULL REFERENCES agents(id),
    name            TEXT NOT NULL,
    prompt          TEXT NOT NULL,
    cron            TEXT,
    run_at          INTEGER,
    time_zone       TEXT NOT NULL,
    status          TEXT NOT NULL CHECK (status IN ('active', 'paused', 'done', 'missed', 'cancelled')),
    next_run_at     INTEGER,
    created_by      TEXT NOT NULL CHECK (created_by IN ('agent', 'admin')),
    conversation_id TEXT,
    created_at      INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL,
    CHECK ((cron IS NULL) <> (run_at IS NULL))
) STRICT;

-- A name is one live schedule of the agent (cancelled and finished ones free it).
CREATE UNIQUE INDEX schedules_live_name ON schedules (agent_id, name) WHERE status IN ('active', 'paused');
CREATE INDEX schedules_due ON schedules (next_run_at) WHERE status = 'active';

-- Each time a schedule came due, and what became of it. `started` until its run stops and the
-- result has been sent to the person (then `finished` or `failed`).
CREATE TABLE schedule_runs (
    id              INTEGER PRIMARY KEY,
    schedule_id     INTEGER NOT NULL REFERENCES schedules(id),
    due_at          INTEGER NOT NULL,
    fired_at        INTEGER NOT NULL,
    outcome         TEXT NOT NULL CHECK (outcome IN ('started', 'finished', 'failed', 'missed', 'skipped_limit')),
    missed_count    INTEGER NOT NULL DEFAULT 0,
    conversation_id TEXT
) STRICT;

CREATE INDEX schedule_runs_open ON schedule_runs (id) WHERE outcome = 'started';
CREATE INDEX schedule_runs_by_schedule ON schedule_runs (schedule_id, id);
CREATE INDEX schedule_runs_by_time ON schedule_runs (fired_at);
