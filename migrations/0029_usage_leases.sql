-- Budget leases (issue 34): a process takes a slice of a budget's remaining room as one
-- reservation row and admits requests against it in memory. The row counts like any
-- reservation for every process's check; `expires_at` (renewed by its holder while it lives)
-- lets it lapse soon after a process that died without returning it, instead of the hour a
-- request's reservation (NULL here) is kept. The ledger's writer lowers the row by each
-- request's real use in the transaction that writes the request's row, so use is counted once.
ALTER TABLE usage_reservations ADD COLUMN expires_at INTEGER;
