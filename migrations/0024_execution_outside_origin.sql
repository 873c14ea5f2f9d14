-- Issue 35: where a call's result came from when it is outside content (a page's host, the
-- hosts code fetched from, the MCP tool or search that answered); NULL for the agent's own
-- stores and for calls recorded before.
ALTER TABLE tool_executions ADD COLUMN outside_origin TEXT;
