-- Erasure by crypto-shredding (issue 18). One data key per (tenant,
-- subject): an event carrying the erasurekey extension has its data
-- encrypted with it (AES-256-GCM). The key is stored wrapped by the
-- master key, which never enters the database; master_key_id is the
-- first 8 bytes of the master key's SHA-256. Forgetting the subject sets
-- master_key_id and wrapped_key to NULL and forgotten_at: the row stays,
-- holding no key, so that reads tell an erased event from a missing key.
CREATE TABLE erasure_keys (
    tenant        TEXT    NOT NULL,
    subject       TEXT    NOT NULL,
    master_key_id BLOB,             -- NULL once forgotten
    wrapped_key   BLOB,             -- NULL once forgotten
    created_at    INTEGER NOT NULL, -- unix nanoseconds
    forgotten_at  INTEGER,          -- unix nanoseconds; NULL while the key lives
    PRIMARY KEY (tenant, subject),
    CHECK ((forgotten_at IS NULL) = (wrapped_key IS NOT NULL))
) WITHOUT ROWID;
-- The newest forget: a store polls it to drop the keys it caches when
-- another process forgets a subject.
CREATE INDEX erasure_keys_forgotten ON erasure_keys (forgotten_at) WHERE forgotten_at IS NOT NULL;
