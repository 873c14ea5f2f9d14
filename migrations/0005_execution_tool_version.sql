-- The version of an agent-made tool that a call ran, so the admin shows the code that failed
-- and statistics can be told apart per version. NULL for built-in tools and older rows.
ALTER TABLE tool_executions ADD COLUMN tool_version INTEGER;
