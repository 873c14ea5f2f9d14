-- React components an agent wrote, compiled on save. Same shape as agent_tools: a deleted
-- component keeps its row and history; versions are append-only.

CREATE TABLE agent_ui_components (
    id           INTEGER PRIMARY KEY,
    agent_id     TEXT NOT NULL REFERENCES agents(id),
    name         TEXT NOT NULL,
    description  TEXT NOT NULL,
    code         TEXT NOT NULL,
    compiled_js  TEXT NOT NULL,
    props_schema TEXT NOT NULL,
    enabled      INTEGER NOT NULL DEFAULT 1 CHECK (enabled IN (0, 1)),
    version      INTEGER NOT NULL CHECK (version >= 1),
    provenance   TEXT,
    created_at   TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    updated_at   TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    deleted_at   TEXT
) STRICT;

CREATE UNIQUE INDEX agent_ui_components_live_name ON agent_ui_components (agent_id, name) WHERE deleted_at IS NULL;

CREATE TABLE agent_ui_component_versions (
    item_id         INTEGER NOT NULL REFERENCES agent_ui_components(id),
    version         INTEGER NOT NULL CHECK (version >= 1),
    description     TEXT NOT NULL,
    code            TEXT NOT NULL,
    compiled_js     TEXT NOT NULL,
    props_schema    TEXT NOT NULL,
    author          TEXT NOT NULL CHECK (author IN ('agent', 'admin', 'rollback', 'install')),
    reason          TEXT,
    conversation_id TEXT,
    tool_call_id    TEXT,
    created_at      TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    PRIMARY KEY (item_id, version)
) STRICT;

CREATE TRIGGER agent_ui_component_versions_are_append_only_update
BEFORE UPDATE ON agent_ui_component_versions
BEGIN
    SELECT RAISE(ABORT, 'component history is append-only');
END;

CREATE TRIGGER agent_ui_component_versions_are_append_only_delete
BEFORE DELETE ON agent_ui_component_versions
BEGIN
    SELECT RAISE(ABORT, 'component history is append-only');
END;
