-- The event log: streams, events, one outbox row per event.
CREATE TABLE streams (
    tenant     TEXT    NOT NULL,
    stream_id  TEXT    NOT NULL,
    version    INTEGER NOT NULL,
    created_at INTEGER NOT NULL, -- unix nanoseconds
    updated_at INTEGER NOT NULL, -- unix nanoseconds
    PRIMARY KEY (tenant, stream_id)
) WITHOUT ROWID;

-- AUTOINCREMENT: a position is never reused, even after the newest rows are
-- deleted (a checkpoint past a reused position would silently skip an event).
-- Never INSERT OR IGNORE into this table: an ignored row burns a position.
CREATE TABLE events (
    position       INTEGER PRIMARY KEY AUTOINCREMENT,
    tenant         TEXT    NOT NULL,
    stream_id      TEXT    NOT NULL,
    version        INTEGER NOT NULL CHECK (version >= 1),
    event_id       TEXT    NOT NULL,
    type           TEXT    NOT NULL,
    source         TEXT    NOT NULL,
    time           INTEGER NOT NULL, -- unix nanoseconds, UTC
    content_type   TEXT    NOT NULL,
    data_schema    TEXT    NOT NULL DEFAULT '',
    data           BLOB,             -- NULL: the event has no data
    correlation_id TEXT    NOT NULL DEFAULT '',
    causation_id   TEXT    NOT NULL DEFAULT '',
    extensions     TEXT,             -- JSON object of other extensions, or NULL
    recorded_at    INTEGER NOT NULL, -- unix nanoseconds
    UNIQUE (tenant, stream_id, version),
    UNIQUE (tenant, event_id)
);

CREATE TABLE outbox (
    position        INTEGER PRIMARY KEY REFERENCES events (position),
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_attempt_at INTEGER,
    last_error      TEXT,
    published_at    INTEGER,
    broker_sequence INTEGER
);
