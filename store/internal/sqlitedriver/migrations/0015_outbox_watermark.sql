-- The outbox becomes the relay's ledger (issue 13): an append writes no
-- outbox row. A row exists only for an event the relay settled (published
-- or discarded) or that failed (attempts, next attempt, dead letter).
--
-- outbox_watermark holds two positions:
--   settled (W): every event at or below it is settled (its row is
--                published or discarded). An event is pending when it is
--                above W and has no row, or a row neither published nor
--                discarded.
--   scanned (C): every pending event in (W, max(W, C)] belongs to a
--                stream with a failed row (attempts > 0, pending) at or
--                below it: the relay reads above C, and reaches those
--                streams' events through their failed rows, so a parked
--                stream does not make it read what was published since.
-- Both move only in the relay's and the operator's transactions.
CREATE TABLE outbox_watermark (
    id      INTEGER PRIMARY KEY CHECK (id = 1),
    settled INTEGER NOT NULL,
    scanned INTEGER NOT NULL
);

-- Every event had a row: W is just below the smallest pending one, or the
-- newest event when none is pending.
INSERT INTO outbox_watermark (id, settled, scanned)
    SELECT 1, w, w FROM (SELECT COALESCE(
        (SELECT min(position) FROM outbox WHERE published_at IS NULL AND discarded_at IS NULL) - 1,
        (SELECT max(position) FROM events),
        0) AS w);

-- The rows appends wrote and nothing touched since say what no row says.
DELETE FROM outbox WHERE published_at IS NULL AND discarded_at IS NULL
    AND attempts = 0 AND dead_at IS NULL AND last_error IS NULL AND first_failed_at IS NULL;

-- Appends no longer write pending rows: the relay reads events above the
-- watermark instead.
DROP INDEX outbox_pending;
