-- Each agent's toolsets and tool loading (wright_core::ToolSettings as JSON), set in the API or
-- the admin page. An agent without a row uses `[agents.<id>.tools]` in config.toml, or the
-- defaults. Current settings only: a change replaces the row.
CREATE TABLE agent_tool_settings (
    agent_id      TEXT PRIMARY KEY NOT NULL REFERENCES agents(id),
    settings_json TEXT NOT NULL,
    updated_at    TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
) STRICT;
