-- Deleting and truncating streams. The events stay in the log; these two
-- columns say what a stream read shows and what an append may do.
-- first_version: reads start here (a truncate moves it to N, a delete past
-- the tombstone). deleted: 0 live, 1 soft-deleted (reads as not found,
-- counts as absent for appends, the next append revives it), 2 hard-deleted
-- (never written or read again).
ALTER TABLE streams ADD COLUMN first_version INTEGER NOT NULL DEFAULT 1;
ALTER TABLE streams ADD COLUMN deleted INTEGER NOT NULL DEFAULT 0 CHECK (deleted IN (0, 1, 2));
