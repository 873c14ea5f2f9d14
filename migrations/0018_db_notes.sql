-- The agent's notes about its own database (what each of its tables is for): a third
-- versioned document of every agent, beside the system prompt and the learned notes. The
-- `documents` table's CHECK names only those two kinds, and rebuilding it would mean dropping
-- a parent of the append-only `document_versions`; so this document has its own pair of
-- tables with the same columns, and the store reads it through the same code.

CREATE TABLE db_notes (
    agent_id    TEXT NOT NULL REFERENCES agents(id),
    kind        TEXT NOT NULL CHECK (kind = 'db_notes'),
    content     TEXT NOT NULL,
    version     INTEGER NOT NULL CHECK (version >= 1),
    updated_at  TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    PRIMARY KEY (agent_id, kind)
) STRICT;

CREATE TABLE db_note_versions (
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
    FOREIGN KEY (agent_id, kind) REFERENCES db_notes(agent_id, kind)
) STRICT;

CREATE TRIGGER db_note_versions_are_append_only_update
BEFORE UPDATE ON db_note_versions
BEGIN
    SELECT RAISE(ABORT, 'document history is append-only');
END;

CREATE TRIGGER db_note_versions_are_append_only_delete
BEFORE DELETE ON db_note_versions
BEGIN
    SELECT RAISE(ABORT, 'document history is append-only');
END;

-- Every existing agent gets its (empty) notes at version 1, as a new agent does.
INSERT INTO db_notes (agent_id, kind, content, version) SELECT id, 'db_notes', '', 1 FROM agents;
INSERT INTO db_note_versions (agent_id, kind, version, content, author, reason)
    SELECT id, 'db_notes', 1, '', 'admin', 'initial version' FROM agents;
