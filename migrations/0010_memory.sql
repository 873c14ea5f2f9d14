-- Layered memory (issue 16): what an agent keeps at four time scales, searchable by full text,
-- expiring into an archive the person can restore from, every change kept in a history.
-- Times here are integer milliseconds since the Unix epoch, written by the store from its
-- injectable clock (expiry is decided by time, and tests fix the time); the API shows them as
-- ISO-8601.

-- A session: a span of an agent's conversations (seed 001's session division). At most one is
-- open per agent; a new one starts at the configured local time (daily or weekly), on
-- `/newsession` typed in the chat, or when the model asks. Session-layer memories end with it.
CREATE TABLE conversation_sessions (
    id          INTEGER PRIMARY KEY,
    agent_id    TEXT NOT NULL REFERENCES agents(id),
    name        TEXT NOT NULL,
    started_by  TEXT NOT NULL CHECK (started_by IN ('schedule', 'person', 'agent')),
    started_at  INTEGER NOT NULL,
    ended_at    INTEGER
) STRICT;

CREATE UNIQUE INDEX conversation_sessions_one_open_per_agent ON conversation_sessions (agent_id) WHERE ended_at IS NULL;
CREATE INDEX conversation_sessions_by_agent ON conversation_sessions (agent_id, started_at);

-- The session a conversation started in; NULL for conversations older than sessions.
ALTER TABLE conversations ADD COLUMN session_id INTEGER REFERENCES conversation_sessions(id);
-- Set when the person archives a conversation: it leaves the list until unarchived.
ALTER TABLE conversations ADD COLUMN archived_at TEXT;

CREATE TABLE memories (
    -- The rowid, so the full-text index below can point at it (external content).
    id              INTEGER PRIMARY KEY,
    agent_id        TEXT NOT NULL REFERENCES agents(id),
    layer           TEXT NOT NULL CHECK (layer IN ('long', 'mid', 'short', 'session')),
    category        TEXT,
    certainty       REAL CHECK (certainty IS NULL OR (certainty >= 0.0 AND certainty <= 1.0)),
    content         TEXT NOT NULL,
    -- The session a session-layer memory ends with.
    session_id      INTEGER REFERENCES conversation_sessions(id),
    conversation_id TEXT,
    author          TEXT NOT NULL CHECK (author IN ('agent', 'admin', 'system')),
    created_at      INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL,
    -- NULL: never expires (the long layer, unless configured otherwise).
    expires_at      INTEGER,
    -- Set when the memory leaves the active set; never deleted, the person can restore it.
    archived_at     INTEGER,
    archived_reason TEXT CHECK (archived_reason IN ('forget', 'expire')),
    CHECK ((archived_at IS NULL) = (archived_reason IS NULL))
) STRICT;

-- The active memories of an agent by layer (context, list), and the ones due to expire.
CREATE INDEX memories_active_by_layer ON memories (agent_id, layer, created_at) WHERE archived_at IS NULL;
CREATE INDEX memories_due ON memories (expires_at) WHERE archived_at IS NULL AND expires_at IS NOT NULL;

-- BM25 over content and category. External content: the text lives once, in `memories`; the
-- triggers keep the index in step with every insert and update (memories are never deleted,
-- but the delete trigger keeps the index honest if a future migration does).
CREATE VIRTUAL TABLE memories_fts USING fts5(
    content, category,
    content = 'memories', content_rowid = 'id',
    tokenize = 'porter unicode61 remove_diacritics 2'
);

-- `rank` is BM25 with content counting twice what the category does; ordering by `rank` lets
-- FTS5 rank inside the index, before any row of `memories` is read.
INSERT INTO memories_fts (memories_fts, rank) VALUES ('rank', 'bm25(2.0, 1.0)');

CREATE TRIGGER memories_fts_insert AFTER INSERT ON memories
BEGIN
    INSERT INTO memories_fts (rowid, content, category) VALUES (NEW.id, NEW.content, NEW.category);
END;

CREATE TRIGGER memories_fts_delete AFTER DELETE ON memories
BEGIN
    INSERT INTO memories_fts (memories_fts, rowid, content, category)
    VALUES ('delete', OLD.id, OLD.content, OLD.category);
END;

CREATE TRIGGER memories_fts_update AFTER UPDATE OF content, category ON memories
BEGIN
    INSERT INTO memories_fts (memories_fts, rowid, content, category)
    VALUES ('delete', OLD.id, OLD.content, OLD.category);
    INSERT INTO memories_fts (rowid, content, category) VALUES (NEW.id, NEW.content, NEW.category);
END;

-- Every change to a memory, with the memory as it was after the change. Append-only.
CREATE TABLE memory_history (
    id              INTEGER PRIMARY KEY,
    memory_id       INTEGER NOT NULL REFERENCES memories(id),
    action          TEXT NOT NULL CHECK (action IN ('store', 'edit', 'forget', 'expire', 'restore')),
    author          TEXT NOT NULL CHECK (author IN ('agent', 'admin', 'system')),
    conversation_id TEXT,
    layer           TEXT NOT NULL,
    category        TEXT,
    certainty       REAL,
    content         TEXT NOT NULL,
    expires_at      INTEGER,
    created_at      INTEGER NOT NULL
) STRICT;

CREATE INDEX memory_history_by_memory ON memory_history (memory_id, id);

CREATE TRIGGER memory_history_is_append_only_update
BEFORE UPDATE ON memory_history
BEGIN
    SELECT RAISE(ABORT, 'memory history is append-only');
END;

CREATE TRIGGER memory_history_is_append_only_delete
BEFORE DELETE ON memory_history
BEGIN
    SELECT RAISE(ABORT, 'memory history is append-only');
END;
