-- Learning from experience (issue 31): the outcome of every finished run, the person's
-- ratings, cases (a message plus a check judged from stored data), learned items (candidates
-- until a learning round validates them), their versioned changes, and learning rounds with
-- each candidate's per-case before/after.

-- One row per finished run. A run is named by its conversation and the seq of the person's
-- message that started it (`user_seq`); `end_seq` is the last event it stored. The outcome
-- may change after the run (a rating, a check, a correction in the next message), so this
-- is a current value, not history; what the person said stays in `run_feedback`.
CREATE TABLE run_outcomes (
    conversation_id TEXT NOT NULL REFERENCES conversations(id),
    user_seq        INTEGER NOT NULL,
    agent_id        TEXT NOT NULL REFERENCES agents(id),
    end_seq         INTEGER NOT NULL,
    outcome         TEXT NOT NULL CHECK (outcome IN ('success', 'failure', 'unknown')),
    source          TEXT NOT NULL CHECK (source IN ('completed', 'check', 'rating', 'errors_unanswered',
                                                    'cancel', 'turn_limit', 'run_failed', 'correction')),
    -- The person's message, kept for gathering candidates without reading the whole history.
    request         TEXT NOT NULL,
    -- The reads of the run brought outside content into its context (web pages, search, MCP).
    read_outside    INTEGER NOT NULL DEFAULT 0 CHECK (read_outside IN (0, 1)),
    finished_at     TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    updated_at      TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    PRIMARY KEY (conversation_id, user_seq)
) STRICT;

CREATE INDEX run_outcomes_by_agent ON run_outcomes (agent_id, finished_at);

-- Every rating the person gave, append-only (the latest one decides the run's outcome).
CREATE TABLE run_feedback (
    id              INTEGER PRIMARY KEY,
    conversation_id TEXT NOT NULL REFERENCES conversations(id),
    user_seq        INTEGER NOT NULL,
    rating          TEXT NOT NULL CHECK (rating IN ('up', 'down')),
    comment         TEXT,
    created_at      TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
) STRICT;

CREATE TRIGGER run_feedback_is_append_only
BEFORE UPDATE ON run_feedback
BEGIN
    SELECT RAISE(ABORT, 'feedback is append-only');
END;

-- A case: a message to replay and a check judged from stored data (JSON of wright-core's
-- `CaseCheck`). `conversation_id` is the conversation it came from, if any.
CREATE TABLE learning_cases (
    id              INTEGER PRIMARY KEY,
    agent_id        TEXT NOT NULL REFERENCES agents(id),
    message         TEXT NOT NULL,
    check_json      TEXT NOT NULL,
    conversation_id TEXT REFERENCES conversations(id),
    created_at      TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
) STRICT;

CREATE INDEX learning_cases_by_agent ON learning_cases (agent_id);

-- A learned item. `status` is its current state; every change of it is a row of
-- `learned_item_changes` (who, why), which is append-only.
CREATE TABLE learned_items (
    id            INTEGER PRIMARY KEY,
    agent_id      TEXT NOT NULL REFERENCES agents(id),
    kind          TEXT NOT NULL CHECK (kind IN ('exemplar', 'error_fix', 'notes_edit')),
    -- The words of the requests it is for (what it is matched to a new request by).
    trigger       TEXT NOT NULL,
    text          TEXT NOT NULL,
    -- JSON list of [conversation_id, user_seq]: the runs it was learned from.
    source_runs   TEXT NOT NULL,
    read_outside  INTEGER NOT NULL CHECK (read_outside IN (0, 1)),
    status        TEXT NOT NULL CHECK (status IN ('candidate', 'awaiting_approval', 'live', 'refused',
                                                  'rejected', 'rolled_back')),
    created_at    TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    updated_at    TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
) STRICT;

CREATE UNIQUE INDEX learned_items_unique_text ON learned_items (agent_id, kind, text);

CREATE TABLE learned_item_changes (
    id         INTEGER PRIMARY KEY,
    item_id    INTEGER NOT NULL REFERENCES learned_items(id),
    version    INTEGER NOT NULL,
    status     TEXT NOT NULL,
    author     TEXT NOT NULL CHECK (author IN ('learning', 'person', 'counters')),
    reason     TEXT NOT NULL,
    created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
) STRICT;

CREATE TRIGGER learned_item_changes_are_append_only
BEFORE UPDATE ON learned_item_changes
BEGIN
    SELECT RAISE(ABORT, 'learned item changes are append-only');
END;

-- Which live items a run's requests carried: the counters are the outcomes of these runs.
CREATE TABLE learned_item_uses (
    item_id         INTEGER NOT NULL REFERENCES learned_items(id),
    conversation_id TEXT NOT NULL,
    user_seq        INTEGER NOT NULL,
    PRIMARY KEY (item_id, conversation_id, user_seq)
) STRICT;

CREATE TABLE learning_rounds (
    id              INTEGER PRIMARY KEY,
    agent_id        TEXT NOT NULL REFERENCES agents(id),
    status          TEXT NOT NULL CHECK (status IN ('running', 'finished', 'failed')),
    trigger         TEXT NOT NULL CHECK (trigger IN ('person', 'schedule', 'cli')),
    replays_done    INTEGER NOT NULL DEFAULT 0,
    replays_total   INTEGER NOT NULL DEFAULT 0,
    held_out_total  INTEGER NOT NULL DEFAULT 0,
    passed_before   INTEGER,
    passed_after    INTEGER,
    error           TEXT,
    started_at      TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    finished_at     TEXT
) STRICT;

CREATE INDEX learning_rounds_by_agent ON learning_rounds (agent_id, id);

CREATE TABLE learning_round_candidates (
    round_id      INTEGER NOT NULL REFERENCES learning_rounds(id),
    item_id       INTEGER NOT NULL REFERENCES learned_items(id),
    decision      TEXT CHECK (decision IN ('accepted', 'awaiting_approval', 'refused')),
    reason        TEXT,
    added_tokens  INTEGER NOT NULL,
    PRIMARY KEY (round_id, item_id)
) STRICT;

-- One replay of a held-out case in a round: `before` any candidate (the items live when the
-- round began), with one `candidate` (`item_id`), or `after` with every accepted one.
CREATE TABLE learning_replays (
    id        INTEGER PRIMARY KEY,
    round_id  INTEGER NOT NULL REFERENCES learning_rounds(id),
    case_id   INTEGER NOT NULL,
    item_id   INTEGER,
    phase     TEXT NOT NULL CHECK (phase IN ('before', 'candidate', 'after')),
    passed    INTEGER NOT NULL CHECK (passed IN (0, 1)),
    detail    TEXT NOT NULL
) STRICT;

-- The person's learning settings per agent (defaults when absent).
CREATE TABLE learning_settings (
    agent_id          TEXT PRIMARY KEY NOT NULL REFERENCES agents(id),
    require_approval  INTEGER NOT NULL CHECK (require_approval IN (0, 1)),
    nightly           INTEGER NOT NULL CHECK (nightly IN (0, 1)),
    last_nightly_day  TEXT
) STRICT;
