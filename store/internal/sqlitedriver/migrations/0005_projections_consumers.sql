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
