-- The versions a restore took back. When a restore replaces a file whose
-- streams had gone further than the backup's, it records for each such
-- stream the versions the replaced file had handed out above the backup's
-- (from_version..to_version) and appends an eventlite.stream.restored event
-- at to_version + 1, so that the stream's next append continues above every
-- version it ever had. The invariants and doctor accept these ranges as
-- gaps. detected_by: 'restore'.
CREATE TABLE IF NOT EXISTS version_gaps (
    tenant       TEXT    NOT NULL,
    stream_id    TEXT    NOT NULL,
    from_version INTEGER NOT NULL CHECK (from_version >= 1),
    to_version   INTEGER NOT NULL,
    detected_by  TEXT    NOT NULL,
    recorded_at  INTEGER NOT NULL, -- unix nanoseconds
    PRIMARY KEY (tenant, stream_id, from_version),
    CHECK (to_version >= from_version)
) WITHOUT ROWID;
