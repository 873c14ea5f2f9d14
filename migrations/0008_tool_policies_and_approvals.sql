-- Approvals: a policy per agent and tool (allow | ask | deny) overriding the tool's default;
-- a parked call says what it waits for (an answer, or approval to run); the execution log
-- says who let a call run or refused it.
CREATE TABLE tool_policies (
    agent_id    TEXT NOT NULL REFERENCES agents(id),
    tool_name   TEXT NOT NULL,
    policy      TEXT NOT NULL CHECK (policy IN ('allow', 'ask', 'deny')),
    updated_at  TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    PRIMARY KEY (agent_id, tool_name)
) STRICT;

ALTER TABLE pending_calls ADD COLUMN kind TEXT NOT NULL DEFAULT 'question' CHECK (kind IN ('question', 'approval'));

ALTER TABLE tool_executions ADD COLUMN decided_by TEXT CHECK (decided_by IN ('policy', 'person'));
