-- The conversation protocol is typed (wright-core `EventBody`): every stored body carries its
-- own fields. User events kept their text only in `content`, error notices their message only
-- there; both move into `data_json`. The append-only trigger is lifted for this one rewrite
-- of a representation (the text itself does not change) and put back as it was.
DROP TRIGGER events_are_append_only_update;

UPDATE events SET data_json = json_object('text', content) WHERE kind = 'user';
UPDATE events SET data_json = json_set(data_json, '$.message', content)
    WHERE kind = 'notice' AND data_json ->> '$.type' = 'error' AND data_json ->> '$.message' IS NULL;

CREATE TRIGGER events_are_append_only_update
BEFORE UPDATE ON events
BEGIN
    SELECT RAISE(ABORT, 'conversation events are append-only');
END;

-- One owner per run, decided in the store. A running conversation names the process that
-- owns its run (`run_owner`, a random id per process) and until when that claim holds
-- (`run_lease_until`, renewed while the process lives). Claiming, parking, answering and
-- finishing are conditional writes on these columns, so two processes (the CLI beside the
-- server) or two requests can never both own a run, and recovery at start touches only runs
-- whose owner is gone.
ALTER TABLE conversations ADD COLUMN run_owner TEXT;
ALTER TABLE conversations ADD COLUMN run_lease_until TEXT;

-- A run an older version left 'running' (it crashed) has no owner: give it one whose lease
-- has long run out, so the next start recovers it like any run whose owner is gone.
UPDATE conversations SET run_owner = 'before-leases', run_lease_until = '1970-01-01T00:00:00.000Z'
    WHERE status = 'running';
