-- One row: a counter that every change able to lower or reshape a
-- tenant's counts moves (an event removed or moved, a stream's row
-- updated or removed, a stream written with a history of its own, a
-- recorded version gap). Inventory.Stats keeps each tenant's counts with
-- the counter and the newest position they include, and adds what was
-- appended after that position while the counter has not moved; an
-- append moves nothing here, so it costs nothing (the streams trigger is
-- per row: the append's revive statement, which changes no row of a live
-- stream, fires nothing). The triggers are schema, not code: no path
-- that removes events can forget them.
-- Idempotent: a schema set back to an older version runs it again.
CREATE TABLE IF NOT EXISTS stats_generation (
    one        BOOLEAN PRIMARY KEY DEFAULT TRUE CHECK (one),
    generation BIGINT  NOT NULL
);
-- The counter starts at the clock (microseconds), not at 0, as on SQLite.
INSERT INTO stats_generation (one, generation) VALUES (TRUE, (extract(epoch FROM clock_timestamp()) * 1000000)::bigint) ON CONFLICT DO NOTHING;
-- The functions name the table in the trigger's own schema: a statement
-- run with another search_path (a tool, a test) still finds it.
CREATE OR REPLACE FUNCTION stats_generation_bump() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE format('UPDATE %I.stats_generation SET generation = generation + 1', TG_TABLE_SCHEMA);
    RETURN NULL;
END $$;
-- A statement that deleted rows: one bump, however many (a scavenge
-- deletes in batches).
CREATE OR REPLACE FUNCTION stats_generation_bump_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM removed_rows) THEN
        EXECUTE format('UPDATE %I.stats_generation SET generation = generation + 1', TG_TABLE_SCHEMA);
    END IF;
    RETURN NULL;
END $$;
CREATE OR REPLACE TRIGGER stats_events_deleted AFTER DELETE ON events
    REFERENCING OLD TABLE AS removed_rows FOR EACH STATEMENT EXECUTE FUNCTION stats_generation_bump_deleted();
CREATE OR REPLACE TRIGGER stats_events_truncated AFTER TRUNCATE ON events
    FOR EACH STATEMENT EXECUTE FUNCTION stats_generation_bump();
CREATE OR REPLACE TRIGGER stats_events_moved AFTER UPDATE OF position, tenant, stream_id, version ON events
    FOR EACH ROW EXECUTE FUNCTION stats_generation_bump();
CREATE OR REPLACE TRIGGER stats_streams_inserted AFTER INSERT ON streams
    FOR EACH ROW WHEN (NEW.deleted <> 0 OR NEW.first_version <> 1) EXECUTE FUNCTION stats_generation_bump();
CREATE OR REPLACE TRIGGER stats_streams_updated AFTER UPDATE ON streams
    FOR EACH ROW EXECUTE FUNCTION stats_generation_bump();
CREATE OR REPLACE TRIGGER stats_streams_deleted AFTER DELETE ON streams
    FOR EACH ROW EXECUTE FUNCTION stats_generation_bump();
CREATE OR REPLACE TRIGGER stats_streams_truncated AFTER TRUNCATE ON streams
    FOR EACH STATEMENT EXECUTE FUNCTION stats_generation_bump();
CREATE OR REPLACE TRIGGER stats_gaps_changed AFTER INSERT OR UPDATE OR DELETE ON version_gaps
    FOR EACH ROW EXECUTE FUNCTION stats_generation_bump();
