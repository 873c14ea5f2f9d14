-- The installation's marketplace: agent-made tools and UI components published as bundles,
-- each version pinned by the SHA-256 of its canonical JSON.

CREATE TABLE market_listings (
    id              INTEGER PRIMARY KEY,
    kind            TEXT NOT NULL CHECK (kind IN ('tool', 'component')),
    name            TEXT NOT NULL,
    publisher_agent TEXT NOT NULL,
    created_at      TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    UNIQUE (kind, name)
) STRICT;

-- Versions are append-only: an installed tool names (listing, version, hash) and must always
-- be able to find exactly what it installed.
CREATE TABLE market_listing_versions (
    listing_id      INTEGER NOT NULL REFERENCES market_listings(id),
    version         INTEGER NOT NULL CHECK (version >= 1),
    description     TEXT NOT NULL,
    bundle          TEXT NOT NULL,
    hash            TEXT NOT NULL,
    publisher_agent TEXT NOT NULL,
    source          TEXT NOT NULL,
    created_at      TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    PRIMARY KEY (listing_id, version)
) STRICT;

CREATE TRIGGER market_listing_versions_are_append_only_update
BEFORE UPDATE ON market_listing_versions
BEGIN
    SELECT RAISE(ABORT, 'listing versions are append-only');
END;

CREATE TRIGGER market_listing_versions_are_append_only_delete
BEFORE DELETE ON market_listing_versions
BEGIN
    SELECT RAISE(ABORT, 'listing versions are append-only');
END;
