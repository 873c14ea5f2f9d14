-- Browser sessions that logout can end, the installation's own id, and marketplace provenance
-- recorded from what this installation knows rather than from an imported file.

-- This installation's id: random, made once, never changed. A listing version published here
-- records it; an imported one records NULL (its origin is a file whose claims are unverified).
CREATE TABLE installation (
    singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
    id        TEXT NOT NULL
) STRICT;
INSERT INTO installation (singleton, id) VALUES (1, lower(hex(randomblob(16))));

-- A session cookie carries a random id; only its SHA-256 is stored, so a copy of the database
-- does not let anyone log in. `token_fingerprint` ties the session to the access token it was
-- opened with: changing the token ends every session.
CREATE TABLE sessions (
    id_hash           TEXT PRIMARY KEY,
    token_fingerprint TEXT NOT NULL,
    created_at        TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    expires_at        TEXT NOT NULL
) STRICT;

-- `local`: published on this installation by one of its agents or its admin. `import`: made
-- by importing a bundle file. An import never adds a version to a local listing unless the
-- person asks for it explicitly.
ALTER TABLE market_listings ADD COLUMN origin TEXT NOT NULL DEFAULT 'local' CHECK (origin IN ('local', 'import'));
UPDATE market_listings SET origin = 'import'
    WHERE NOT EXISTS (SELECT 1 FROM market_listing_versions v WHERE v.listing_id = market_listings.id AND v.source <> 'import');

-- The installation a version was published on (this one's id), or NULL for an imported file.
-- Versions published before this migration were published here unless imported; filling that
-- in is the one rewrite of history, done with the append-only trigger lifted for it alone.
ALTER TABLE market_listing_versions ADD COLUMN source_installation TEXT;
DROP TRIGGER market_listing_versions_are_append_only_update;
UPDATE market_listing_versions SET source_installation = (SELECT id FROM installation) WHERE source <> 'import';
CREATE TRIGGER market_listing_versions_are_append_only_update
BEFORE UPDATE ON market_listing_versions
BEGIN
    SELECT RAISE(ABORT, 'listing versions are append-only');
END;
