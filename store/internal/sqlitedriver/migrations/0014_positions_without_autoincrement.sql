-- eventlite: foreign_keys off
-- Positions without AUTOINCREMENT, and no streams write per append (issue 13).
--
-- The writer hands out positions itself: the next one is
-- max(MAX(events.position), position_floor.position) + 1, computed under
-- the write lock, so positions stay commit-ordered and gap-free. The floor
-- remembers positions that were handed out but are no longer in the log:
-- a scavenge raises it to the head before it removes events, a restore to
-- the replaced file's head, and this migration takes SQLite's sequence.
-- Only those three write it, never an append.
CREATE TABLE position_floor (
    one      INTEGER PRIMARY KEY CHECK (one = 1),
    position INTEGER NOT NULL CHECK (position >= 0)
);
INSERT INTO position_floor (one, position)
SELECT 1, max(COALESCE((SELECT seq FROM sqlite_sequence WHERE name = 'events'), 0), 0);

-- Rebuild events without AUTOINCREMENT: same columns, constraints and
-- rows. Foreign keys are off while it runs (the outbox references events);
-- the migration checks them before it commits.
CREATE TABLE events_new (
    position       INTEGER PRIMARY KEY,
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
INSERT INTO events_new (position, tenant, stream_id, version, event_id, type, source, time,
    content_type, data_schema, data, correlation_id, causation_id, extensions, recorded_at)
SELECT position, tenant, stream_id, version, event_id, type, source, time,
    content_type, data_schema, data, correlation_id, causation_id, extensions, recorded_at
FROM events ORDER BY position;
DROP TABLE events;
ALTER TABLE events_new RENAME TO events;

CREATE TRIGGER events_removed_id BEFORE INSERT ON events
WHEN EXISTS (SELECT 1 FROM removed_event_ids r WHERE r.tenant = NEW.tenant AND r.event_id = NEW.event_id)
BEGIN
    SELECT RAISE(ABORT, 'UNIQUE constraint failed: events.tenant, events.event_id (a scavenge removed the event)');
END;

-- A stream's version is its newest event's (the events' unique
-- (tenant, stream_id, version) index finds it), its updated time that
-- event's recorded_at: an append to an existing stream writes no streams
-- row. The row is inserted when the stream is created and changed only by
-- deletes and truncations.
ALTER TABLE streams DROP COLUMN version;
ALTER TABLE streams DROP COLUMN updated_at;
