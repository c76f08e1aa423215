-- The operation ledger: one row per idempotent command, written in the
-- same transaction as the events it produced, so there is no in-progress
-- state to get stuck in.
CREATE TABLE operations (
    tenant         TEXT    NOT NULL,
    operation_id   TEXT    NOT NULL,
    operation_type TEXT    NOT NULL,
    input_hash     TEXT    NOT NULL,
    result         BLOB    NOT NULL, -- JSON: what the first execution returned
    created_at     INTEGER NOT NULL, -- unix nanoseconds
    PRIMARY KEY (tenant, operation_id)
) WITHOUT ROWID;

-- Snapshots of aggregate state, one per stream and state schema version.
CREATE TABLE snapshots (
    tenant         TEXT    NOT NULL,
    stream_id      TEXT    NOT NULL,
    schema_version INTEGER NOT NULL,
    version        INTEGER NOT NULL, -- the stream version the state includes
    state          BLOB    NOT NULL,
    created_at     INTEGER NOT NULL,
    PRIMARY KEY (tenant, stream_id, schema_version)
) WITHOUT ROWID;
