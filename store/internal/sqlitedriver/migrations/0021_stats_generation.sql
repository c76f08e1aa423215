-- One row: a counter that every change able to lower or reshape a
-- tenant's counts moves (an event removed or moved, a stream's row
-- updated or removed, a stream written with a history of its own, a
-- recorded version gap). Inventory.Stats keeps each tenant's counts with
-- the counter and the newest position they include, and adds what was
-- appended after that position while the counter has not moved; an
-- append moves nothing here, so it costs nothing. The triggers are
-- schema, not code: no path that removes events can forget them.
-- Idempotent: a file set back to an older schema runs it again.
CREATE TABLE IF NOT EXISTS stats_generation (
    one        INTEGER PRIMARY KEY CHECK (one = 1),
    generation INTEGER NOT NULL
);
-- The counter starts at the clock (microseconds), not at 0: a file
-- restored from a backup older than this migration, then migrated while
-- a store had the file open, does not meet again the value that store
-- kept.
INSERT OR IGNORE INTO stats_generation (one, generation) VALUES (1, CAST(strftime('%s', 'now') AS INTEGER) * 1000000);
CREATE TRIGGER IF NOT EXISTS stats_events_deleted AFTER DELETE ON events
BEGIN
    UPDATE stats_generation SET generation = generation + 1;
END;
CREATE TRIGGER IF NOT EXISTS stats_events_moved AFTER UPDATE OF position, tenant, stream_id, version ON events
BEGIN
    UPDATE stats_generation SET generation = generation + 1;
END;
CREATE TRIGGER IF NOT EXISTS stats_streams_inserted AFTER INSERT ON streams
WHEN NEW.deleted <> 0 OR NEW.first_version <> 1
BEGIN
    UPDATE stats_generation SET generation = generation + 1;
END;
CREATE TRIGGER IF NOT EXISTS stats_streams_updated AFTER UPDATE ON streams
BEGIN
    UPDATE stats_generation SET generation = generation + 1;
END;
CREATE TRIGGER IF NOT EXISTS stats_streams_deleted AFTER DELETE ON streams
BEGIN
    UPDATE stats_generation SET generation = generation + 1;
END;
CREATE TRIGGER IF NOT EXISTS stats_gaps_inserted AFTER INSERT ON version_gaps
BEGIN
    UPDATE stats_generation SET generation = generation + 1;
END;
CREATE TRIGGER IF NOT EXISTS stats_gaps_updated AFTER UPDATE ON version_gaps
BEGIN
    UPDATE stats_generation SET generation = generation + 1;
END;
CREATE TRIGGER IF NOT EXISTS stats_gaps_deleted AFTER DELETE ON version_gaps
BEGIN
    UPDATE stats_generation SET generation = generation + 1;
END;
