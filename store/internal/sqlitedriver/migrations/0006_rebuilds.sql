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
