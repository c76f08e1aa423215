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
