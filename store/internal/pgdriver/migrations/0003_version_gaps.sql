-- The versions a restore took back (SQLite's migration 0018): a store
-- restored on SQLite and copied here keeps its ranges, which the invariants
-- and doctor accept as gaps. PostgreSQL's own recovery records none.
CREATE TABLE IF NOT EXISTS version_gaps (
    tenant       TEXT COLLATE "C" NOT NULL,
    stream_id    TEXT COLLATE "C" NOT NULL,
    from_version BIGINT NOT NULL CHECK (from_version >= 1),
    to_version   BIGINT NOT NULL,
    detected_by  TEXT   NOT NULL,
    recorded_at  BIGINT NOT NULL, -- unix nanoseconds
    PRIMARY KEY (tenant, stream_id, from_version),
    CHECK (to_version >= from_version)
);
