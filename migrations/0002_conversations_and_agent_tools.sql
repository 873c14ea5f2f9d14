-- Conversations and their canonical events, pausing tool calls, and agent-made tools.

CREATE TABLE conversations (
    id          TEXT PRIMARY KEY NOT NULL,
    agent_id    TEXT NOT NULL REFERENCES agents(id),
    title       TEXT NOT NULL,
    status      TEXT NOT NULL DEFAULT 'idle' CHECK (status IN ('idle', 'running', 'waiting', 'error')),
    created_at  TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    updated_at  TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
) STRICT;

CREATE INDEX conversations_by_agent ON conversations (agent_id, updated_at);

-- The provider-neutral transcript (DESIGN.md §3). Append-only like document history: a run
-- killed mid-way reloads with every event that was stored.
CREATE TABLE events (
    conversation_id TEXT NOT NULL REFERENCES conversations(id),
    seq             INTEGER NOT NULL CHECK (seq >= 1),
    kind            TEXT NOT NULL CHECK (kind IN ('system', 'user', 'assistant', 'tool_call', 'tool_result', 'notice')),
    content         TEXT NOT NULL,
    data_json       TEXT NOT NULL,
    created_at      TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    PRIMARY KEY (conversation_id, seq)
) STRICT;

CREATE TRIGGER events_are_append_only_update
BEFORE UPDATE ON events
BEGIN
    SELECT RAISE(ABORT, 'conversation events are append-only');
END;

-- A conversation's activity time follows its events, inside SQLite: no extra round trip.
CREATE TRIGGER events_touch_conversation
AFTER INSERT ON events
BEGIN
    UPDATE conversations SET updated_at = NEW.created_at WHERE id = NEW.conversation_id;
END;

-- A tool call that waits for the person (render_and_wait, render_blocks, ask_user). It is
-- answered once: `status` moves from 'pending' to 'answered' or 'dismissed' and never back.
CREATE TABLE pending_calls (
    id              INTEGER PRIMARY KEY,
    conversation_id TEXT NOT NULL REFERENCES conversations(id),
    tool_call_id    TEXT NOT NULL,
    tool_name       TEXT NOT NULL,
    args            TEXT NOT NULL,
    -- What the canvas renders, fixed when the call was parked: for render_and_wait the
    -- component's name, version and compiled code; JSON null otherwise.
    render          TEXT NOT NULL DEFAULT 'null',
    status          TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'answered', 'dismissed')),
    answer          TEXT,
    created_at      TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    answered_at     TEXT
) STRICT;

-- Providers may reuse a call id in a later turn; only one call per id may be waiting.
CREATE UNIQUE INDEX pending_calls_waiting ON pending_calls (conversation_id, tool_call_id) WHERE status = 'pending';

-- Tools an agent wrote. A deleted tool keeps its row and history (deleted_at set); its name
-- can be used again by a new tool, which starts at version 1 with a new id.
CREATE TABLE agent_tools (
    id               INTEGER PRIMARY KEY,
    agent_id         TEXT NOT NULL REFERENCES agents(id),
    name             TEXT NOT NULL,
    description      TEXT NOT NULL,
    parameter_schema TEXT NOT NULL,
    code             TEXT NOT NULL,
    -- The tool's own run limits as JSON, e.g. {"deadline_ms": 5000}; 'null' for the defaults.
    limits           TEXT NOT NULL DEFAULT 'null',
    enabled          INTEGER NOT NULL DEFAULT 1 CHECK (enabled IN (0, 1)),
    version          INTEGER NOT NULL CHECK (version >= 1),
    provenance       TEXT,
    created_at       TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    updated_at       TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    deleted_at       TEXT
) STRICT;

CREATE UNIQUE INDEX agent_tools_live_name ON agent_tools (agent_id, name) WHERE deleted_at IS NULL;

CREATE TABLE agent_tool_versions (
    item_id          INTEGER NOT NULL REFERENCES agent_tools(id),
    version          INTEGER NOT NULL CHECK (version >= 1),
    description      TEXT NOT NULL,
    parameter_schema TEXT NOT NULL,
    code             TEXT NOT NULL,
    limits           TEXT NOT NULL DEFAULT 'null',
    author           TEXT NOT NULL CHECK (author IN ('agent', 'admin', 'rollback', 'install')),
    reason           TEXT,
    conversation_id  TEXT,
    tool_call_id     TEXT,
    created_at       TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    PRIMARY KEY (item_id, version)
) STRICT;

CREATE TRIGGER agent_tool_versions_are_append_only_update
BEFORE UPDATE ON agent_tool_versions
BEGIN
    SELECT RAISE(ABORT, 'tool history is append-only');
END;

CREATE TRIGGER agent_tool_versions_are_append_only_delete
BEFORE DELETE ON agent_tool_versions
BEGIN
    SELECT RAISE(ABORT, 'tool history is append-only');
END;
