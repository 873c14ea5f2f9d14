-- Memory vectors (issue 16): when an embedding endpoint is configured (`[memory.embeddings]`),
-- each memory's content is embedded and recall ranks by full text and vectors together.
-- Vectors belong to one embedding space (a model, and the dimensions asked of it); a memory
-- has at most one vector per space, and only the configured space's vectors are kept.
-- (Recall now scores full text itself from each word's matches, `memory/recall.rs`: the `rank`
-- setting 0010 gave memories_fts stays, unused.)

CREATE TABLE memory_vectors (
    -- Increases with every vector written (AUTOINCREMENT: never reused), so an in-memory
    -- index loads only what is newer than what it holds. A re-embedded memory gets a new row.
    seq         INTEGER PRIMARY KEY AUTOINCREMENT,
    memory_id   INTEGER NOT NULL REFERENCES memories(id),
    space       TEXT NOT NULL,
    agent_id    TEXT NOT NULL REFERENCES agents(id),
    dimensions  INTEGER NOT NULL CHECK (dimensions > 0),
    -- The sign of each component, one bit each (little-endian u64 words): the in-memory
    -- index's quantised copy, loaded from the covering index below without the vectors.
    bits        BLOB NOT NULL,
    -- The vector scaled to length 1, as little-endian f32 × dimensions.
    vector      BLOB NOT NULL CHECK (length(vector) = 4 * dimensions),
    embedded_at INTEGER NOT NULL,
    UNIQUE (memory_id, space)
) STRICT;

-- Covers the index's load (`seq > ?` of one agent in one space): 100,000 sign-bit rows read
-- without touching the vectors (1.5–6 KB each).
CREATE INDEX memory_vectors_by_space ON memory_vectors (space, agent_id, seq, memory_id, bits);

-- Memories whose vector in the configured space is missing or stale: stored or edited while
-- the endpoint failed, restored, or stored before embeddings were configured. Drained right
-- after each store and edit, at recall and by the server's sweep; a failure waits longer each
-- time (`attempts`), and says why (`last_error`).
CREATE TABLE memory_embedding_queue (
    memory_id       INTEGER PRIMARY KEY REFERENCES memories(id),
    agent_id        TEXT NOT NULL REFERENCES agents(id),
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_attempt_at INTEGER NOT NULL,
    last_error      TEXT
) STRICT;

CREATE INDEX memory_embedding_queue_due ON memory_embedding_queue (agent_id, next_attempt_at);
