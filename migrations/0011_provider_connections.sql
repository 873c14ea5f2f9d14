-- Provider connections added in the canvas, and which model each agent talks to.
-- Keys are not here: they live in `secrets.json` of the data directory, readable only by the
-- owner, so a copy or export of this database carries none.

CREATE TABLE provider_connections (
    id         TEXT PRIMARY KEY NOT NULL DEFAULT (lower(hex(randomblob(8)))),
    name       TEXT NOT NULL UNIQUE,
    -- openai | anthropic | gemini | openai_compatible | ollama (checked by the server).
    kind       TEXT NOT NULL,
    -- NULL: the vendor's public endpoint.
    base_url   TEXT,
    created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    updated_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);

-- One row per agent with its own model, and one with agent_id '' for the default.
-- connection_id names a stored connection or one from the environment ('env:openai'), so it
-- has no foreign key; deleting a stored connection deletes its choices in the same transaction.
CREATE TABLE model_choices (
    agent_id       TEXT PRIMARY KEY NOT NULL,
    connection_id  TEXT NOT NULL,
    model          TEXT NOT NULL,
    tool_calls     TEXT NOT NULL DEFAULT 'native' CHECK (tool_calls IN ('native', 'text')),
    -- Tokens, for a provider that does not say; NULL when unknown.
    context_window INTEGER CHECK (context_window IS NULL OR context_window > 0),
    updated_at     TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);
