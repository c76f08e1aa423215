-- Leases give one worker at a time a resource (the relay, a projection).
-- The token grows with every new owner; fenced writes compare it, so a
-- worker that lost its lease cannot write. Times are milliseconds from
-- SQLite's clock, read in SQL, so every process on the host uses one clock.
CREATE TABLE leases (
    resource    TEXT    PRIMARY KEY,
    owner       TEXT    NOT NULL, -- '' when released
    token       INTEGER NOT NULL,
    expires_at  INTEGER NOT NULL, -- unix milliseconds, SQLite's clock
    acquired_at INTEGER NOT NULL
) WITHOUT ROWID;

-- A reader's place in the global log: it has applied every event up to
-- and including position.
CREATE TABLE checkpoints (
    name       TEXT    PRIMARY KEY,
    position   INTEGER NOT NULL,
    token      INTEGER NOT NULL, -- the lease token of the last write
    updated_at INTEGER NOT NULL  -- unix nanoseconds
) WITHOUT ROWID;
