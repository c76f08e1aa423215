-- The streams a subject's encrypted events were appended to:
-- forget finds the snapshots to drop through this record, which
-- outlives the events (a truncate and a scavenge may have removed them
-- while a snapshot derived from their plaintext stays). The append that
-- encrypts under a subject records its stream in its own transaction.
-- Stream ids and subject keys are attributes, in clear in the log too.
-- Idempotent: a file set back to an older schema runs it again.
CREATE TABLE IF NOT EXISTS erasure_streams (
    tenant    TEXT COLLATE "C" NOT NULL,
    subject   TEXT COLLATE "C" NOT NULL,
    stream_id TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (tenant, subject, stream_id)
);
-- The events still in the log say where the subjects' events went so far.
INSERT INTO erasure_streams (tenant, subject, stream_id)
SELECT DISTINCT tenant, extensions::json ->> 'erasurekey', stream_id
FROM events
WHERE extensions IS NOT NULL AND extensions::json ->> 'erasurekey' IS NOT NULL
ON CONFLICT DO NOTHING;
