-- Web Push (issue 30): the browsers the person asked to be notified on. One row per browser
-- (its push service's endpoint is unique to it); the keys are the browser's, for RFC 8291's
-- encryption. Removed by the person, or when the push service says the endpoint is gone.
CREATE TABLE push_subscriptions (
    id            INTEGER PRIMARY KEY,
    endpoint      TEXT NOT NULL UNIQUE,
    -- The browser's P-256 public key (uncompressed point) and auth secret, base64url.
    p256dh        TEXT NOT NULL,
    auth          TEXT NOT NULL,
    -- What the person sees in the list of devices (the browser and system it said it was).
    label         TEXT NOT NULL,
    created_at    INTEGER NOT NULL,
    last_sent_at  INTEGER,
    -- The last failure, for the list of devices; cleared by a success.
    last_error    TEXT
) STRICT;
