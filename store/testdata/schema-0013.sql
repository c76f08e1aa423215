-- ==== 0001_event_log.sql
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

-- ==== 0002_operations_snapshots.sql
-- The operation ledger: one row per idempotent command, written in the
-- same transaction as the events it produced, so there is no in-progress
-- state to get stuck in.
CREATE TABLE operations (
    tenant         TEXT    NOT NULL,
    operation_id   TEXT    NOT NULL,
    operation_type TEXT    NOT NULL,
    input_hash     TEXT    NOT NULL,
    result         BLOB    NOT NULL, -- JSON: what the first execution returned
    created_at     INTEGER NOT NULL, -- unix nanoseconds
    PRIMARY KEY (tenant, operation_id)
) WITHOUT ROWID;

-- Snapshots of aggregate state, one per stream and state schema version.
CREATE TABLE snapshots (
    tenant         TEXT    NOT NULL,
    stream_id      TEXT    NOT NULL,
    schema_version INTEGER NOT NULL,
    version        INTEGER NOT NULL, -- the stream version the state includes
    state          BLOB    NOT NULL,
    created_at     INTEGER NOT NULL,
    PRIMARY KEY (tenant, stream_id, schema_version)
) WITHOUT ROWID;

-- ==== 0003_leases_checkpoints.sql
-- Leases give one worker at a time a resource (the relay, a projection).
-- The token grows with every new owner; fenced writes compare it, so a
-- worker that lost its lease cannot write. Times are milliseconds from
-- SQLite's clock, read in SQL, so every process on the host uses one clock.
CREATE TABLE leases (
    resource    TEXT    PRIMARY KEY,
    owner       TEXT    NOT NULL, -- '' when released
    token       INTEGER NOT NULL,
    expires_at  INTEGER NOT NULL, -- unix milliseconds, SQLite's clock
    acquired_at INTEGER NOT NULL
) WITHOUT ROWID;

-- A reader's place in the global log: it has applied every event up to
-- and including position.
CREATE TABLE checkpoints (
    name       TEXT    PRIMARY KEY,
    position   INTEGER NOT NULL,
    token      INTEGER NOT NULL, -- the lease token of the last write
    updated_at INTEGER NOT NULL  -- unix nanoseconds
) WITHOUT ROWID;

-- ==== 0004_outbox_relay.sql
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

-- ==== 0005_projections_consumers.sql
-- Projections: their status (a runner's lease lives in leases, their place
-- in checkpoints).
CREATE TABLE projections (
    name       TEXT    PRIMARY KEY,
    status     TEXT    NOT NULL DEFAULT 'active', -- active | stopped | rebuilding
    detail     TEXT    NOT NULL DEFAULT '',
    updated_at INTEGER NOT NULL
) WITHOUT ROWID;

-- Events set aside for a person: a handler that kept failing, an event
-- nobody can interpret, a deferral that waited too long. Evidence is JSON.
CREATE TABLE quarantine (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    consumer    TEXT    NOT NULL,
    reason      TEXT    NOT NULL, -- handler_error | uninterpretable | deferred_too_long | undecodable
    tenant      TEXT    NOT NULL DEFAULT '',
    subject     TEXT    NOT NULL DEFAULT '',
    version     INTEGER NOT NULL DEFAULT 0,
    position    INTEGER NOT NULL DEFAULT 0,
    event_id    TEXT    NOT NULL DEFAULT '',
    event       BLOB,             -- the event, structured JSON, when it decoded
    error       TEXT    NOT NULL DEFAULT '',
    attempts    INTEGER NOT NULL DEFAULT 0,
    evidence    TEXT    NOT NULL DEFAULT '{}',
    created_at  INTEGER NOT NULL,
    resolved_at INTEGER
);
CREATE UNIQUE INDEX quarantine_open ON quarantine (consumer, tenant, event_id, position) WHERE resolved_at IS NULL;

-- Global-position holes a reader passed (never waited for: with one
-- SQLite writer a hole below the head cannot fill later).
CREATE TABLE position_holes (
    from_position INTEGER PRIMARY KEY,
    to_position   INTEGER NOT NULL,
    detected_by   TEXT    NOT NULL,
    detected_at   INTEGER NOT NULL
) WITHOUT ROWID;

-- External consumers. The inbox insert is the dedupe decision.
CREATE TABLE inbox (
    tenant       TEXT    NOT NULL,
    consumer     TEXT    NOT NULL,
    source       TEXT    NOT NULL,
    message_id   TEXT    NOT NULL,
    processed_at INTEGER NOT NULL,
    PRIMARY KEY (tenant, consumer, source, message_id)
) WITHOUT ROWID;

-- The last version a consumer applied per aggregate.
CREATE TABLE consumer_versions (
    consumer   TEXT    NOT NULL,
    tenant     TEXT    NOT NULL,
    subject    TEXT    NOT NULL,
    version    INTEGER NOT NULL,
    event_id   TEXT    NOT NULL,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (consumer, tenant, subject)
) WITHOUT ROWID;

-- Events that arrived ahead of a gap, kept durably until it fills.
CREATE TABLE deferred (
    consumer   TEXT    NOT NULL,
    tenant     TEXT    NOT NULL,
    subject    TEXT    NOT NULL,
    version    INTEGER NOT NULL,
    event_id   TEXT    NOT NULL,
    event      BLOB    NOT NULL, -- structured JSON
    expected   INTEGER NOT NULL, -- the version the consumer waited for
    first_seen INTEGER NOT NULL, -- unix nanoseconds, the consumer's clock
    reason     TEXT    NOT NULL,
    PRIMARY KEY (consumer, tenant, subject, version)
) WITHOUT ROWID;

-- Two different events claiming one version of one aggregate.
CREATE TABLE version_conflicts (
    id                  INTEGER PRIMARY KEY AUTOINCREMENT,
    consumer            TEXT    NOT NULL,
    tenant              TEXT    NOT NULL,
    subject             TEXT    NOT NULL,
    version             INTEGER NOT NULL,
    kept_event_id       TEXT    NOT NULL,
    conflicting_id      TEXT    NOT NULL,
    conflicting_event   BLOB    NOT NULL,
    created_at          INTEGER NOT NULL,
    resolved_at         INTEGER
);

-- Counters per consumer: duplicates suppressed, stale events ignored.
CREATE TABLE consumer_stats (
    consumer   TEXT    PRIMARY KEY,
    applied    INTEGER NOT NULL DEFAULT 0,
    duplicates INTEGER NOT NULL DEFAULT 0,
    stale      INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;

-- ==== 0006_rebuilds.sql
-- Replay (issue 6): a projection's rebuild in progress, into shadow copies
-- of its tables named <table>__rb<generation>. The row lives from the
-- rebuild's start until its swap (or the end of a dry run); a rebuild that
-- failed or was killed leaves it behind, and the next run resumes from it.
CREATE TABLE rebuilds (
    projection TEXT    PRIMARY KEY,
    generation INTEGER NOT NULL, -- names the shadow tables
    checkpoint INTEGER NOT NULL, -- the shadow holds every matching event up to here
    watermark  INTEGER NOT NULL, -- the log head when the latest run started
    applied    INTEGER NOT NULL, -- events applied to the shadow since generation began
    started_at INTEGER NOT NULL, -- unix nanoseconds
    updated_at INTEGER NOT NULL  -- unix nanoseconds
) WITHOUT ROWID;

-- The last generation given to each projection. It outlives the rebuild
-- row: a swap renames the shadow tables but keeps their index names
-- (<table>__rb<generation>_...), so a later rebuild must never reuse it.
CREATE TABLE rebuild_generations (
    projection TEXT    PRIMARY KEY,
    generation INTEGER NOT NULL
) WITHOUT ROWID;

-- ==== 0007_effects.sql
-- The effect ledger: one row per external side effect (an email, a card
-- charge, a partner call), keyed by tenant and effect key, so a second
-- attempt finds the first instead of doing it again.
CREATE TABLE effects (
    tenant       TEXT    NOT NULL,
    effect_key   TEXT    NOT NULL,
    state        TEXT    NOT NULL, -- RESERVED, EXECUTING, COMPLETED, FAILED, UNKNOWN, COMPENSATED
    provider_ref TEXT    NOT NULL DEFAULT '',
    attempts     INTEGER NOT NULL DEFAULT 0,
    last_error   TEXT    NOT NULL DEFAULT '',
    created_at   INTEGER NOT NULL, -- unix nanoseconds
    updated_at   INTEGER NOT NULL,
    started_at   INTEGER,          -- when the current attempt began executing
    PRIMARY KEY (tenant, effect_key)
) WITHOUT ROWID;
CREATE INDEX effects_open ON effects (state, updated_at) WHERE state IN ('EXECUTING', 'UNKNOWN', 'RESERVED');

-- ==== 0008_quarantine_actions.sql
-- Quarantine entries an operator acts on: marked for retry (the runner or
-- consumer applies the event again on its next pass) or skipped, with the
-- time of the latest failure and how each entry was resolved. Leases keep
-- their period, so a reader can tell how long an expired lease has waited
-- for a new owner.
ALTER TABLE quarantine ADD COLUMN last_failed_at INTEGER;     -- unix nanoseconds; NULL: created_at
ALTER TABLE quarantine ADD COLUMN retry_requested_at INTEGER; -- set by a retry request, cleared by the attempt
ALTER TABLE quarantine ADD COLUMN resolution TEXT NOT NULL DEFAULT ''; -- applied, retried, skipped, ...
ALTER TABLE leases ADD COLUMN ttl_ms INTEGER NOT NULL DEFAULT 0;      -- the holder's lease period; 0: unknown

-- ==== 0009_reserved.sql
-- Placeholder: version 9 belongs to another change (the append internals).
-- When both are merged, this file is replaced by that migration.
SELECT 1;

-- ==== 0010_effect_approvals.sql
-- Effects that wait for a person, and retry rules by kind. An effect's
-- kind, resource, approval flag and arguments are fixed by its first run;
-- args holds the RFC 8785 canonical JSON of the arguments ('' for none),
-- the exact bytes an approval is bound to and the call receives. Rows
-- from before this migration are external effects without arguments.
ALTER TABLE effects ADD COLUMN kind TEXT NOT NULL DEFAULT 'external'; -- derived, analytics, external, permission, irreversible
ALTER TABLE effects ADD COLUMN resource TEXT NOT NULL DEFAULT '';
ALTER TABLE effects ADD COLUMN summary TEXT NOT NULL DEFAULT '';
ALTER TABLE effects ADD COLUMN args TEXT NOT NULL DEFAULT '';
ALTER TABLE effects ADD COLUMN needs_approval INTEGER NOT NULL DEFAULT 0;
ALTER TABLE effects ADD COLUMN approval_valid_for INTEGER NOT NULL DEFAULT 0; -- nanoseconds; 0: forever
ALTER TABLE effects ADD COLUMN requested_by TEXT NOT NULL DEFAULT '';
ALTER TABLE effects ADD COLUMN requested_at INTEGER NOT NULL DEFAULT 0; -- unix nanoseconds of the pending request; 0: none
ALTER TABLE effects ADD COLUMN decided_by TEXT NOT NULL DEFAULT '';
ALTER TABLE effects ADD COLUMN decided_at INTEGER NOT NULL DEFAULT 0;   -- 0: no decision
ALTER TABLE effects ADD COLUMN reason TEXT NOT NULL DEFAULT '';
DROP INDEX effects_open;
CREATE INDEX effects_open ON effects (state, updated_at) WHERE state IN ('EXECUTING', 'UNKNOWN', 'RESERVED', 'AWAITING_APPROVAL', 'APPROVED');

-- ==== 0011_stream_lifecycle.sql
-- Deleting and truncating streams. The events stay in the log; these two
-- columns say what a stream read shows and what an append may do.
-- first_version: reads start here (a truncate moves it to N, a delete past
-- the tombstone). deleted: 0 live, 1 soft-deleted (reads as not found,
-- counts as absent for appends, the next append revives it), 2 hard-deleted
-- (never written or read again).
ALTER TABLE streams ADD COLUMN first_version INTEGER NOT NULL DEFAULT 1;
ALTER TABLE streams ADD COLUMN deleted INTEGER NOT NULL DEFAULT 0 CHECK (deleted IN (0, 1, 2));

-- ==== 0012_retention_scavenge.sql
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

-- ==== 0013_erasure_keys.sql
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

