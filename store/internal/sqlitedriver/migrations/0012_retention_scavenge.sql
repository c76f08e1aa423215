-- Retention and scavenge (issue 17).
--
-- Retention policies by stream-id prefix (the longest matching prefix
-- wins), for streams of every tenant. max_age in nanoseconds, measured from
-- when an event was recorded; max_count counts events whose type does not
-- start with "eventlite.". NULL: no limit of that kind.
CREATE TABLE retention_policies (
    prefix     TEXT    PRIMARY KEY,
    max_age    INTEGER CHECK (max_age IS NULL OR max_age > 0),
    max_count  INTEGER CHECK (max_count IS NULL OR max_count > 0),
    updated_at INTEGER NOT NULL, -- unix nanoseconds
    CHECK (max_age IS NOT NULL OR max_count IS NOT NULL)
) WITHOUT ROWID;

-- Global positions a scavenge removed: runs of consecutive positions,
-- merged with their neighbours. They are not holes. AUTOINCREMENT on
-- events keeps them from ever being handed out again.
CREATE TABLE removed_ranges (
    from_position INTEGER PRIMARY KEY,
    to_position   INTEGER NOT NULL,
    removed_at    INTEGER NOT NULL -- unix nanoseconds, of the latest merge
) WITHOUT ROWID;

-- The ids of removed events, per tenant: reusing one is refused as a
-- duplicate, as it was before the removal (guarantee 5).
CREATE TABLE removed_event_ids (
    tenant   TEXT NOT NULL,
    event_id TEXT NOT NULL,
    PRIMARY KEY (tenant, event_id)
) WITHOUT ROWID;

CREATE TRIGGER events_removed_id BEFORE INSERT ON events
WHEN EXISTS (SELECT 1 FROM removed_event_ids r WHERE r.tenant = NEW.tenant AND r.event_id = NEW.event_id)
BEGIN
    SELECT RAISE(ABORT, 'UNIQUE constraint failed: events.tenant, events.event_id (a scavenge removed the event)');
END;
