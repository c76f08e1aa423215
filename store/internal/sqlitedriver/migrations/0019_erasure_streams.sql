-- The streams a subject's encrypted events were appended to:
-- forget finds the snapshots to drop through this record, which
-- outlives the events (a truncate and a scavenge may have removed them
-- while a snapshot derived from their plaintext stays). The append that
-- encrypts under a subject records its stream in its own transaction.
-- Stream ids and subject keys are attributes, in clear in the log too.
-- Idempotent: a file set back to an older schema runs it again.
CREATE TABLE IF NOT EXISTS erasure_streams (
    tenant    TEXT NOT NULL,
    subject   TEXT NOT NULL,
    stream_id TEXT NOT NULL,
    PRIMARY KEY (tenant, subject, stream_id)
) WITHOUT ROWID;
-- The events still in the log say where the subjects' events went so far.
INSERT INTO erasure_streams (tenant, subject, stream_id)
SELECT DISTINCT tenant, json_extract(x, '$.erasurekey'), stream_id
FROM (SELECT tenant, stream_id, CASE WHEN length(substr(substr(substr(attrs, instr(attrs, x'00') + 1), instr(substr(attrs, instr(attrs, x'00') + 1), x'00') + 1), instr(substr(substr(attrs, instr(attrs, x'00') + 1), instr(substr(attrs, instr(attrs, x'00') + 1), x'00') + 1), x'00') + 1)) > 0 THEN CAST(substr(substr(substr(attrs, instr(attrs, x'00') + 1), instr(substr(attrs, instr(attrs, x'00') + 1), x'00') + 1), instr(substr(substr(attrs, instr(attrs, x'00') + 1), instr(substr(attrs, instr(attrs, x'00') + 1), x'00') + 1), x'00') + 1) AS TEXT) END AS x FROM events WHERE attrs IS NOT NULL)
WHERE x IS NOT NULL AND json_valid(x) AND json_type(x, '$.erasurekey') = 'text'
ON CONFLICT DO NOTHING;
