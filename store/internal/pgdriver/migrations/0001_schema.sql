-- The store's schema in PostgreSQL: every table SQLite's store has after
-- all its migrations (store/internal/sqlitedriver/migrations), with the
-- same names and columns, plus log_head. Types: INTEGER columns are
-- BIGINT (times are unix nanoseconds), BLOB is BYTEA; key text columns
-- compare bytewise (COLLATE "C") so that listing and paging order match
-- SQLite's; SQLite's AUTOINCREMENT ids are identity columns (those ids
-- name rows, not log positions).

-- One row: the last position handed out, and a commit counter. Every
-- write transaction's first statement moves the counter, which locks the
-- row (the equivalent of SQLite's BEGIN IMMEDIATE), and takes its
-- positions from position. So positions are handed out and become visible
-- in commit order, and a follower never passes a position that a slower
-- transaction fills later. position only grows (an append, a scavenge or
-- a restore moves it up, nothing moves it down); a rolled back
-- transaction leaves the row as it was. It also stands for SQLite's
-- position_floor. The change poller compares commits.
CREATE TABLE log_head (
    one      BOOLEAN PRIMARY KEY DEFAULT TRUE CHECK (one),
    position BIGINT  NOT NULL CHECK (position >= 0),
    commits  BIGINT  NOT NULL DEFAULT 0
);
INSERT INTO log_head (one, position) VALUES (TRUE, 0);

CREATE TABLE streams (
    tenant        TEXT COLLATE "C" NOT NULL,
    stream_id     TEXT COLLATE "C" NOT NULL,
    created_at    BIGINT   NOT NULL, -- unix nanoseconds
    first_version BIGINT   NOT NULL DEFAULT 1,
    deleted       SMALLINT NOT NULL DEFAULT 0 CHECK (deleted IN (0, 1, 2)),
    PRIMARY KEY (tenant, stream_id)
);

-- position comes from log_head, never from a sequence.
CREATE TABLE events (
    position       BIGINT PRIMARY KEY CHECK (position >= 1),
    tenant         TEXT COLLATE "C" NOT NULL,
    stream_id      TEXT COLLATE "C" NOT NULL,
    version        BIGINT NOT NULL CHECK (version >= 1),
    event_id       TEXT COLLATE "C" NOT NULL,
    type           TEXT COLLATE "C" NOT NULL,
    source         TEXT   NOT NULL,
    time           BIGINT NOT NULL, -- unix nanoseconds, UTC
    content_type   TEXT   NOT NULL,
    data_schema    TEXT   NOT NULL DEFAULT '',
    data           BYTEA,           -- NULL: the event has no data
    correlation_id TEXT   NOT NULL DEFAULT '',
    causation_id   TEXT   NOT NULL DEFAULT '',
    extensions     TEXT,            -- JSON object of other extensions, or NULL
    recorded_at    BIGINT NOT NULL, -- unix nanoseconds
    CONSTRAINT events_tenant_stream_id_version_key UNIQUE (tenant, stream_id, version),
    CONSTRAINT events_tenant_event_id_key UNIQUE (tenant, event_id)
);

CREATE TABLE outbox (
    position        BIGINT PRIMARY KEY REFERENCES events (position),
    attempts        BIGINT NOT NULL DEFAULT 0,
    next_attempt_at BIGINT,
    last_error      TEXT,
    published_at    BIGINT,
    broker_sequence BIGINT,
    first_failed_at BIGINT,
    last_failed_at  BIGINT,
    dead_at         BIGINT,
    discarded_at    BIGINT,
    published_token BIGINT
);
CREATE INDEX outbox_failing ON outbox (position)
    WHERE published_at IS NULL AND discarded_at IS NULL AND attempts > 0;
-- An append writes no outbox row: the relay reads the events above the
-- watermark, and rows record what happened to an event since.

CREATE TABLE outbox_counters (
    name  TEXT COLLATE "C" PRIMARY KEY, -- published | retried | requeued | dead_lettered | discarded
    value BIGINT NOT NULL
);
INSERT INTO outbox_counters (name, value) VALUES ('published', 0), ('retried', 0), ('requeued', 0), ('dead_lettered', 0), ('discarded', 0);

CREATE TABLE outbox_watermark (
    id      BIGINT PRIMARY KEY CHECK (id = 1),
    settled BIGINT NOT NULL,
    scanned BIGINT NOT NULL
);
INSERT INTO outbox_watermark (id, settled, scanned) VALUES (1, 0, 0);

CREATE TABLE operations (
    tenant         TEXT COLLATE "C" NOT NULL,
    operation_id   TEXT COLLATE "C" NOT NULL,
    operation_type TEXT   NOT NULL,
    input_hash     TEXT   NOT NULL,
    result         BYTEA  NOT NULL, -- JSON: what the first execution returned
    created_at     BIGINT NOT NULL, -- unix nanoseconds
    PRIMARY KEY (tenant, operation_id)
);

CREATE TABLE snapshots (
    tenant         TEXT COLLATE "C" NOT NULL,
    stream_id      TEXT COLLATE "C" NOT NULL,
    schema_version BIGINT NOT NULL,
    version        BIGINT NOT NULL, -- the stream version the state includes
    state          BYTEA  NOT NULL,
    created_at     BIGINT NOT NULL,
    PRIMARY KEY (tenant, stream_id, schema_version)
);

CREATE TABLE leases (
    resource    TEXT COLLATE "C" PRIMARY KEY,
    owner       TEXT   NOT NULL, -- '' when released
    token       BIGINT NOT NULL,
    expires_at  BIGINT NOT NULL, -- unix milliseconds, the database's clock
    acquired_at BIGINT NOT NULL,
    ttl_ms      BIGINT NOT NULL DEFAULT 0
);

CREATE TABLE checkpoints (
    name       TEXT COLLATE "C" PRIMARY KEY,
    position   BIGINT NOT NULL,
    token      BIGINT NOT NULL, -- the lease token of the last write
    updated_at BIGINT NOT NULL  -- unix nanoseconds
);

CREATE TABLE projections (
    name       TEXT COLLATE "C" PRIMARY KEY,
    status     TEXT   NOT NULL DEFAULT 'active', -- active | stopped | rebuilding
    detail     TEXT   NOT NULL DEFAULT '',
    updated_at BIGINT NOT NULL
);

CREATE TABLE quarantine (
    id                 BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    consumer           TEXT COLLATE "C" NOT NULL,
    reason             TEXT   NOT NULL, -- handler_error | uninterpretable | deferred_too_long | undecodable
    tenant             TEXT COLLATE "C" NOT NULL DEFAULT '',
    subject            TEXT COLLATE "C" NOT NULL DEFAULT '',
    version            BIGINT NOT NULL DEFAULT 0,
    position           BIGINT NOT NULL DEFAULT 0,
    event_id           TEXT COLLATE "C" NOT NULL DEFAULT '',
    event              BYTEA,            -- the event, structured JSON, when it decoded
    error              TEXT   NOT NULL DEFAULT '',
    attempts           BIGINT NOT NULL DEFAULT 0,
    evidence           TEXT   NOT NULL DEFAULT '{}',
    created_at         BIGINT NOT NULL,
    resolved_at        BIGINT,
    last_failed_at     BIGINT,
    retry_requested_at BIGINT,
    resolution         TEXT   NOT NULL DEFAULT ''
);
CREATE UNIQUE INDEX quarantine_open ON quarantine (consumer, tenant, event_id, position) WHERE resolved_at IS NULL;

CREATE TABLE position_holes (
    from_position BIGINT PRIMARY KEY,
    to_position   BIGINT NOT NULL,
    detected_by   TEXT   NOT NULL,
    detected_at   BIGINT NOT NULL
);

CREATE TABLE inbox (
    tenant       TEXT COLLATE "C" NOT NULL,
    consumer     TEXT COLLATE "C" NOT NULL,
    source       TEXT COLLATE "C" NOT NULL,
    message_id   TEXT COLLATE "C" NOT NULL,
    processed_at BIGINT NOT NULL,
    PRIMARY KEY (tenant, consumer, source, message_id)
);

CREATE TABLE consumer_versions (
    consumer   TEXT COLLATE "C" NOT NULL,
    tenant     TEXT COLLATE "C" NOT NULL,
    subject    TEXT COLLATE "C" NOT NULL,
    version    BIGINT NOT NULL,
    event_id   TEXT   NOT NULL,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (consumer, tenant, subject)
);

CREATE TABLE deferred (
    consumer   TEXT COLLATE "C" NOT NULL,
    tenant     TEXT COLLATE "C" NOT NULL,
    subject    TEXT COLLATE "C" NOT NULL,
    version    BIGINT NOT NULL,
    event_id   TEXT   NOT NULL,
    event      BYTEA  NOT NULL, -- structured JSON
    expected   BIGINT NOT NULL, -- the version the consumer waited for
    first_seen BIGINT NOT NULL, -- unix nanoseconds, the consumer's clock
    reason     TEXT   NOT NULL,
    PRIMARY KEY (consumer, tenant, subject, version)
);

CREATE TABLE version_conflicts (
    id                BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    consumer          TEXT COLLATE "C" NOT NULL,
    tenant            TEXT COLLATE "C" NOT NULL,
    subject           TEXT COLLATE "C" NOT NULL,
    version           BIGINT NOT NULL,
    kept_event_id     TEXT   NOT NULL,
    conflicting_id    TEXT   NOT NULL,
    conflicting_event BYTEA  NOT NULL,
    created_at        BIGINT NOT NULL,
    resolved_at       BIGINT
);

CREATE TABLE consumer_stats (
    consumer   TEXT COLLATE "C" PRIMARY KEY,
    applied    BIGINT NOT NULL DEFAULT 0,
    duplicates BIGINT NOT NULL DEFAULT 0,
    stale      BIGINT NOT NULL DEFAULT 0
);

CREATE TABLE rebuilds (
    projection TEXT COLLATE "C" PRIMARY KEY,
    generation BIGINT NOT NULL, -- names the shadow tables
    checkpoint BIGINT NOT NULL, -- the shadow holds every matching event up to here
    watermark  BIGINT NOT NULL, -- the log head when the latest run started
    applied    BIGINT NOT NULL, -- events applied to the shadow since generation began
    started_at BIGINT NOT NULL, -- unix nanoseconds
    updated_at BIGINT NOT NULL  -- unix nanoseconds
);

CREATE TABLE rebuild_generations (
    projection TEXT COLLATE "C" PRIMARY KEY,
    generation BIGINT NOT NULL
);

CREATE TABLE effects (
    tenant             TEXT COLLATE "C" NOT NULL,
    effect_key         TEXT COLLATE "C" NOT NULL,
    state              TEXT   NOT NULL, -- RESERVED, EXECUTING, COMPLETED, FAILED, UNKNOWN, COMPENSATED, AWAITING_APPROVAL, APPROVED, REJECTED
    provider_ref       TEXT   NOT NULL DEFAULT '',
    attempts           BIGINT NOT NULL DEFAULT 0,
    last_error         TEXT   NOT NULL DEFAULT '',
    created_at         BIGINT NOT NULL, -- unix nanoseconds
    updated_at         BIGINT NOT NULL,
    started_at         BIGINT,          -- when the current attempt began executing
    kind               TEXT   NOT NULL DEFAULT 'external',
    resource           TEXT   NOT NULL DEFAULT '',
    summary            TEXT   NOT NULL DEFAULT '',
    args               TEXT   NOT NULL DEFAULT '',
    needs_approval     BIGINT NOT NULL DEFAULT 0,
    approval_valid_for BIGINT NOT NULL DEFAULT 0,
    requested_by       TEXT   NOT NULL DEFAULT '',
    requested_at       BIGINT NOT NULL DEFAULT 0,
    decided_by         TEXT   NOT NULL DEFAULT '',
    decided_at         BIGINT NOT NULL DEFAULT 0,
    reason             TEXT   NOT NULL DEFAULT '',
    PRIMARY KEY (tenant, effect_key)
);
CREATE INDEX effects_open ON effects (state, updated_at) WHERE state IN ('EXECUTING', 'UNKNOWN', 'RESERVED', 'AWAITING_APPROVAL', 'APPROVED');

CREATE TABLE retention_policies (
    prefix     TEXT COLLATE "C" PRIMARY KEY,
    max_age    BIGINT CHECK (max_age IS NULL OR max_age > 0),
    max_count  BIGINT CHECK (max_count IS NULL OR max_count > 0),
    updated_at BIGINT NOT NULL, -- unix nanoseconds
    CHECK (max_age IS NOT NULL OR max_count IS NOT NULL)
);

CREATE TABLE removed_ranges (
    from_position BIGINT PRIMARY KEY,
    to_position   BIGINT NOT NULL,
    removed_at    BIGINT NOT NULL -- unix nanoseconds, of the latest merge
);

CREATE TABLE removed_event_ids (
    tenant   TEXT COLLATE "C" NOT NULL,
    event_id TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (tenant, event_id)
);

CREATE TABLE erasure_keys (
    tenant        TEXT COLLATE "C" NOT NULL,
    subject       TEXT COLLATE "C" NOT NULL,
    master_key_id BYTEA,             -- NULL once forgotten
    wrapped_key   BYTEA,             -- NULL once forgotten
    created_at    BIGINT NOT NULL,   -- unix nanoseconds
    forgotten_at  BIGINT,            -- unix nanoseconds; NULL while the key lives
    PRIMARY KEY (tenant, subject),
    CHECK ((forgotten_at IS NULL) = (wrapped_key IS NOT NULL))
);
CREATE INDEX erasure_keys_forgotten ON erasure_keys (forgotten_at) WHERE forgotten_at IS NOT NULL;

-- An event id a scavenge removed is never stored again in its tenant: the
-- same refusal (a unique violation) as for an id still in the log.
CREATE FUNCTION events_removed_id() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM removed_event_ids r WHERE r.tenant = NEW.tenant AND r.event_id = NEW.event_id) THEN
        RAISE unique_violation USING MESSAGE = 'duplicate key value violates unique constraint "events_tenant_event_id_key" (a scavenge removed the event)';
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER events_removed_id BEFORE INSERT ON events
    FOR EACH ROW EXECUTE FUNCTION events_removed_id();
