-- Running totals of the usage ledger per scope and budget period (issue 34): a budget check
-- reads one row instead of summing every request of the period. Kept by the insert of each
-- `usage_records` row, in its transaction. `scope` is an agent id, or '*' for all agents;
-- `period` is 'day' or 'month', `start` the period's first millisecond (UTC).
CREATE TABLE usage_totals (
    scope TEXT NOT NULL,
    period TEXT NOT NULL CHECK (period IN ('day', 'month')),
    start INTEGER NOT NULL,
    tokens INTEGER NOT NULL,
    cost_usd REAL NOT NULL,
    PRIMARY KEY (scope, period, start)
) WITHOUT ROWID;

-- What the ledger already holds (the current and past periods alike).
INSERT INTO usage_totals (scope, period, start, tokens, cost_usd)
SELECT scope, period, start, SUM(tokens), SUM(cost_usd) FROM (
    SELECT COALESCE(agent_id, '') AS agent, '*' AS scope, 'day' AS period,
           CAST(strftime('%s', date(at / 1000, 'unixepoch')) AS INTEGER) * 1000 AS start,
           prompt_tokens + completion_tokens AS tokens, cost_usd FROM usage_records
    UNION ALL
    SELECT '', '*', 'month', CAST(strftime('%s', date(at / 1000, 'unixepoch', 'start of month')) AS INTEGER) * 1000,
           prompt_tokens + completion_tokens, cost_usd FROM usage_records
    UNION ALL
    SELECT agent_id, agent_id, 'day', CAST(strftime('%s', date(at / 1000, 'unixepoch')) AS INTEGER) * 1000,
           prompt_tokens + completion_tokens, cost_usd FROM usage_records WHERE agent_id IS NOT NULL
    UNION ALL
    SELECT agent_id, agent_id, 'month', CAST(strftime('%s', date(at / 1000, 'unixepoch', 'start of month')) AS INTEGER) * 1000,
           prompt_tokens + completion_tokens, cost_usd FROM usage_records WHERE agent_id IS NOT NULL
) GROUP BY scope, period, start;
