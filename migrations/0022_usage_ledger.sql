-- The usage ledger (issue 34): one row per model request — a run's turns and compaction
-- summaries, schedules, learning rounds, embeddings, connection tests — with what it cost at
-- the price of the moment it was written (a later price change does not rewrite the past).
-- Rows are only inserted, never updated.
CREATE TABLE usage_records (
    id                   INTEGER PRIMARY KEY,
    at                   INTEGER NOT NULL,
    agent_id             TEXT,
    conversation_id      TEXT,
    run_id               TEXT,
    caller               TEXT NOT NULL CHECK (caller IN ('person', 'schedule', 'channel', 'learning', 'mcp')),
    purpose              TEXT NOT NULL CHECK (purpose IN ('turn', 'embedding', 'connection_test', 'learning')),
    connection           TEXT NOT NULL,
    model                TEXT NOT NULL,
    -- Every prompt token, cached ones included; `cached_prompt_tokens` is their cached share.
    prompt_tokens        INTEGER NOT NULL,
    cached_prompt_tokens INTEGER NOT NULL,
    completion_tokens    INTEGER NOT NULL,
    reasoning_tokens     INTEGER,
    request_id           TEXT,
    duration_ms          INTEGER NOT NULL,
    cost_usd             REAL NOT NULL,
    -- 1 when the wire reported no usage (or the stream was cut first) and the counts are
    -- Wright's estimate.
    estimated            INTEGER NOT NULL CHECK (estimated IN (0, 1)),
    -- 1 when the response never finished (cancelled, cut, failed): what it used is still here.
    cut                  INTEGER NOT NULL CHECK (cut IN (0, 1))
) STRICT;
CREATE INDEX usage_records_at ON usage_records (at);
CREATE INDEX usage_records_agent_at ON usage_records (agent_id, at);
CREATE INDEX usage_records_conversation ON usage_records (conversation_id, at);

-- What requests in flight may still spend: written with the budget check in one transaction,
-- deleted when the request's row is written (settled with the real usage). A reservation older
-- than an hour belongs to a process that died and no longer counts.
CREATE TABLE usage_reservations (
    id       INTEGER PRIMARY KEY,
    at       INTEGER NOT NULL,
    agent_id TEXT,
    tokens   INTEGER NOT NULL,
    cost_usd REAL NOT NULL
) STRICT;

-- Budget notices already given, so each is given once per period: `budget` names the budget
-- (`all/usd_per_day`, `agent:<id>/tokens_per_month`), `period` is its day or month.
CREATE TABLE budget_notices (
    budget TEXT NOT NULL,
    period TEXT NOT NULL,
    level  TEXT NOT NULL CHECK (level IN ('soft', 'exceeded')),
    at     INTEGER NOT NULL,
    PRIMARY KEY (budget, period, level)
) STRICT;
