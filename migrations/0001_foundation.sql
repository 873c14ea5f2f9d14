-- Wright app database, foundation: agents, versioned documents, KV state, tool executions.
-- Migrations are append-only: never edit a file that has shipped; add a new one.
-- Times are UTC ISO-8601 strings with milliseconds, written by SQLite itself.

CREATE TABLE agents (
    id          TEXT PRIMARY KEY NOT NULL,
    name        TEXT NOT NULL,
    created_at  TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
) STRICT;

-- The current text of each document, one row per (agent, kind). `version` always equals the
-- highest version in document_versions for the same document.
CREATE TABLE documents (
    agent_id    TEXT NOT NULL REFERENCES agents(id),
    kind        TEXT NOT NULL CHECK (kind IN ('system_prompt', 'learned_notes')),
    content     TEXT NOT NULL,
    version     INTEGER NOT NULL CHECK (version >= 1),
    updated_at  TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    PRIMARY KEY (agent_id, kind)
) STRICT;

-- Every version ever written, content included. Append-only: the triggers below refuse any
-- UPDATE or DELETE, so history cannot be rewritten even by a bug in our own SQL.
CREATE TABLE document_versions (
    agent_id        TEXT NOT NULL,
    kind            TEXT NOT NULL,
    version         INTEGER NOT NULL CHECK (version >= 1),
    content         TEXT NOT NULL,
    author          TEXT NOT NULL CHECK (author IN ('agent', 'admin', 'rollback', 'install')),
    reason          TEXT,
    conversation_id TEXT,
    tool_call_id    TEXT,
    created_at      TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    PRIMARY KEY (agent_id, kind, version),
    FOREIGN KEY (agent_id, kind) REFERENCES documents(agent_id, kind)
) STRICT;

CREATE TRIGGER document_versions_are_append_only_update
BEFORE UPDATE ON document_versions
BEGIN
    SELECT RAISE(ABORT, 'document history is append-only');
END;

CREATE TRIGGER document_versions_are_append_only_delete
BEFORE DELETE ON document_versions
BEGIN
    SELECT RAISE(ABORT, 'document history is append-only');
END;

-- The agent's key-value state. `value` is JSON text; `size` is the bytes of key + value,
-- kept so the per-agent total can be checked without reading every value.
CREATE TABLE agent_state (
    agent_id    TEXT NOT NULL REFERENCES agents(id),
    key         TEXT NOT NULL,
    value       TEXT NOT NULL,
    size        INTEGER NOT NULL,
    updated_at  TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    PRIMARY KEY (agent_id, key)
) STRICT, WITHOUT ROWID;

-- Every tool call, whoever made it: the data behind tool statistics and the admin log.
CREATE TABLE tool_executions (
    id              INTEGER PRIMARY KEY,
    agent_id        TEXT NOT NULL REFERENCES agents(id),
    tool_name       TEXT NOT NULL,
    tool_kind       TEXT NOT NULL CHECK (tool_kind IN ('builtin', 'agent')),
    caller          TEXT NOT NULL,
    conversation_id TEXT,
    tool_call_id    TEXT,
    args            TEXT NOT NULL,
    result          TEXT,
    error           TEXT,
    error_category  TEXT,
    success         INTEGER NOT NULL CHECK (success IN (0, 1)),
    duration_us     INTEGER NOT NULL,
    created_at      TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
) STRICT;

CREATE INDEX tool_executions_by_agent_tool_time ON tool_executions (agent_id, tool_name, created_at);
CREATE INDEX tool_executions_by_agent_time ON tool_executions (agent_id, created_at);
