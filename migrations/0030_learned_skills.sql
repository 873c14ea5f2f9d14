-- A learned item may be a skill (issue 31, item 3c): a SKILL.md the agent's model drafted from a
-- failing run; while live it is one of the agent's skills. `learned_items`' CHECK gains 'skill'.
-- SQLite cannot change a CHECK in place, so the table is rebuilt. Its changes, round candidates
-- and replays reference it by id: with foreign keys deferred, dropping it leaves them dangling
-- only until every row is back under the same id, before this migration's transaction commits
-- (and checks them).
PRAGMA defer_foreign_keys = ON;
CREATE TABLE learned_items_before_skills AS SELECT * FROM learned_items;
DROP TABLE learned_items;
CREATE TABLE learned_items (
    id            INTEGER PRIMARY KEY,
    agent_id      TEXT NOT NULL REFERENCES agents(id),
    kind          TEXT NOT NULL CHECK (kind IN ('exemplar', 'error_fix', 'notes_edit', 'skill')),
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
INSERT INTO learned_items (id, agent_id, kind, trigger, text, source_runs, read_outside, status, created_at, updated_at)
    SELECT id, agent_id, kind, trigger, text, source_runs, read_outside, status, created_at, updated_at
    FROM learned_items_before_skills;
DROP TABLE learned_items_before_skills;
CREATE UNIQUE INDEX learned_items_unique_text ON learned_items (agent_id, kind, text);
