-- The event log in PostgreSQL: the head row, streams, events. The columns
-- are those SQLite's store has after all its migrations (store/migrations);
-- times are BIGINT unix nanoseconds, data is bytea, and the key text
-- columns compare bytewise (COLLATE "C"), so listing and paging order
-- match SQLite's.

-- One row: the last position handed out. Every write transaction locks it
-- first (SELECT ... FOR UPDATE) and takes its positions from it, so
-- positions are handed out and become visible in commit order. Its value
-- only grows; a rolled back transaction leaves it as it was.
CREATE TABLE log_head (
    one      BOOLEAN PRIMARY KEY DEFAULT TRUE CHECK (one),
    position BIGINT  NOT NULL CHECK (position >= 0)
);
INSERT INTO log_head (one, position) VALUES (TRUE, 0);

CREATE TABLE streams (
    tenant        TEXT COLLATE "C" NOT NULL,
    stream_id     TEXT COLLATE "C" NOT NULL,
    version       BIGINT   NOT NULL,
    created_at    BIGINT   NOT NULL, -- unix nanoseconds
    updated_at    BIGINT   NOT NULL, -- unix nanoseconds
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
