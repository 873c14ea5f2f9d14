-- Budget leases (issue 34): a process takes a slice of a budget's remaining room as one
-- reservation row and admits requests against it in memory. The row counts like any
-- reservation for every process's check; `expires_at` (renewed by its holder while it lives)
-- lets it lapse soon after a process that died without returning it, instead of the hour a
-- request's reservation (NULL here) is kept. The ledger's writer lowers the row by each
-- request's real use in the transaction that writes the request's row, so use is counted once.
-- Rebuilt with AUTOINCREMENT: a row the writer lowers by id after its lease lapsed must not
-- be another lease that took the freed id.
CREATE TABLE usage_reservations_new (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    at         INTEGER NOT NULL,
    agent_id   TEXT,
    tokens     INTEGER NOT NULL,
    cost_usd   REAL NOT NULL,
    expires_at INTEGER
) STRICT;
INSERT INTO usage_reservations_new (id, at, agent_id, tokens, cost_usd)
    SELECT id, at, agent_id, tokens, cost_usd FROM usage_reservations;
DROP TABLE usage_reservations;
ALTER TABLE usage_reservations_new RENAME TO usage_reservations;
