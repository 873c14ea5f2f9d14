-- Skills in the Agent Skills layout (a folder: SKILL.md and resource files), per agent.
-- Versioned like documents: `skills` holds the current state of each skill, `skill_versions`
-- every state ever written (append-only). A version holds the whole folder: SKILL.md, the
-- resource files as a JSON object of path -> text, whether it is enabled, and whether this
-- version deleted it (a deleted skill keeps its history and can be rolled back).

CREATE TABLE skills (
    agent_id    TEXT NOT NULL REFERENCES agents(id),
    name        TEXT NOT NULL,
    content     TEXT NOT NULL,
    resources   TEXT NOT NULL DEFAULT '{}',
    enabled     INTEGER NOT NULL CHECK (enabled IN (0, 1)),
    deleted     INTEGER NOT NULL CHECK (deleted IN (0, 1)),
    version     INTEGER NOT NULL CHECK (version >= 1),
    updated_at  TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    PRIMARY KEY (agent_id, name)
) STRICT;

CREATE TABLE skill_versions (
    agent_id        TEXT NOT NULL,
    name            TEXT NOT NULL,
    version         INTEGER NOT NULL CHECK (version >= 1),
    content         TEXT NOT NULL,
    resources       TEXT NOT NULL,
    enabled         INTEGER NOT NULL CHECK (enabled IN (0, 1)),
    deleted         INTEGER NOT NULL CHECK (deleted IN (0, 1)),
    author          TEXT NOT NULL CHECK (author IN ('agent', 'admin', 'rollback', 'install')),
    reason          TEXT,
    conversation_id TEXT,
    tool_call_id    TEXT,
    created_at      TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    PRIMARY KEY (agent_id, name, version),
    FOREIGN KEY (agent_id, name) REFERENCES skills(agent_id, name)
) STRICT;

CREATE TRIGGER skill_versions_are_append_only_update
BEFORE UPDATE ON skill_versions
BEGIN
    SELECT RAISE(ABORT, 'skill history is append-only');
END;

CREATE TRIGGER skill_versions_are_append_only_delete
BEFORE DELETE ON skill_versions
BEGIN
    SELECT RAISE(ABORT, 'skill history is append-only');
END;

-- The marketplace carries skills too: `market_listings`' CHECK gains 'skill'. SQLite cannot
-- change a CHECK in place, so the table is rebuilt. Its versions reference it by id: with
-- foreign keys deferred, dropping it leaves them dangling only until every row is back under
-- the same id, before this migration's transaction commits (and checks them).
PRAGMA defer_foreign_keys = ON;
CREATE TABLE market_listings_before_skills AS SELECT * FROM market_listings;
DROP TABLE market_listings;
CREATE TABLE market_listings (
    id              INTEGER PRIMARY KEY,
    kind            TEXT NOT NULL CHECK (kind IN ('tool', 'component', 'skill')),
    name            TEXT NOT NULL,
    publisher_agent TEXT NOT NULL,
    created_at      TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    origin          TEXT NOT NULL DEFAULT 'local' CHECK (origin IN ('local', 'import')),
    UNIQUE (kind, name)
) STRICT;
INSERT INTO market_listings (id, kind, name, publisher_agent, created_at, origin)
    SELECT id, kind, name, publisher_agent, created_at, origin FROM market_listings_before_skills;
DROP TABLE market_listings_before_skills;
