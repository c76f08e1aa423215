-- The outbox relay (issue 4): failure bookkeeping, dead letters and the
-- indexes that keep the relay off published rows.
--
-- Times are unix nanoseconds. attempts counts failed publish attempts
-- (a broker that is down counts none). A row is
--   pending       while published_at IS NULL AND discarded_at IS NULL;
--   backing off   while pending with next_attempt_at in the future;
--   a dead letter while pending with dead_at set: it parks its stream
--                 (the stream's later rows wait) until an operator
--                 retries it (dead_at cleared) or discards it
--                 (discarded_at set: never published).
ALTER TABLE outbox ADD COLUMN first_failed_at INTEGER;
ALTER TABLE outbox ADD COLUMN last_failed_at  INTEGER;
ALTER TABLE outbox ADD COLUMN dead_at         INTEGER;
ALTER TABLE outbox ADD COLUMN discarded_at    INTEGER;
-- The relay lease token under which the row was marked published.
ALTER TABLE outbox ADD COLUMN published_token INTEGER;

-- The relay reads pending rows in position order from this index only:
-- published rows leave it, so a long log costs the relay nothing.
CREATE INDEX outbox_pending ON outbox (position)
    WHERE published_at IS NULL AND discarded_at IS NULL;

-- Pending rows that failed at least once: backing off or dead. Appends
-- insert attempts = 0 and never touch it. The relay derives the streams it
-- must hold back from these rows.
CREATE INDEX outbox_failing ON outbox (position)
    WHERE published_at IS NULL AND discarded_at IS NULL AND attempts > 0;

-- Running totals for stats, moved in the relay's and operator's
-- transactions (counting published rows would scan the whole outbox).
CREATE TABLE outbox_counters (
    name  TEXT    PRIMARY KEY, -- published | retried | requeued | dead_lettered | discarded
    value INTEGER NOT NULL
) WITHOUT ROWID;
INSERT INTO outbox_counters (name, value)
    SELECT 'published', count(*) FROM outbox WHERE published_at IS NOT NULL;
INSERT INTO outbox_counters (name, value) VALUES ('retried', 0), ('requeued', 0), ('dead_lettered', 0), ('discarded', 0);
