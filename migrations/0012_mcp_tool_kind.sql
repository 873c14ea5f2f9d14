-- Calls of tools from MCP servers (`mcp__<server>__<tool>`) are recorded like the others, with
-- tool_kind 'mcp'. SQLite cannot change a CHECK constraint in place, so the table is rebuilt
-- with the same columns, rows, ids and indexes. Nothing references tool_executions.
CREATE TABLE tool_executions_new (
    id              INTEGER PRIMARY KEY,
    agent_id        TEXT NOT NULL REFERENCES agents(id),
    tool_name       TEXT NOT NULL,
    tool_kind       TEXT NOT NULL CHECK (tool_kind IN ('builtin', 'agent', 'mcp')),
    caller          TEXT NOT NULL,
    conversation_id TEXT,
    tool_call_id    TEXT,
    args            TEXT NOT NULL,
    result          TEXT,
    error           TEXT,
    error_category  TEXT,
    success         INTEGER NOT NULL CHECK (success IN (0, 1)),
    duration_us     INTEGER NOT NULL,
    created_at      TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    tool_version    INTEGER,
    decided_by      TEXT CHECK (decided_by IN ('policy', 'person'))
) STRICT;

INSERT INTO tool_executions_new (id, agent_id, tool_name, tool_kind, caller, conversation_id, tool_call_id, args,
                                 result, error, error_category, success, duration_us, created_at, tool_version,
                                 decided_by)
SELECT id, agent_id, tool_name, tool_kind, caller, conversation_id, tool_call_id, args,
       result, error, error_category, success, duration_us, created_at, tool_version, decided_by
FROM tool_executions;

DROP TABLE tool_executions;
ALTER TABLE tool_executions_new RENAME TO tool_executions;

CREATE INDEX tool_executions_by_agent_tool_time ON tool_executions (agent_id, tool_name, created_at);
CREATE INDEX tool_executions_by_agent_time ON tool_executions (agent_id, created_at);
