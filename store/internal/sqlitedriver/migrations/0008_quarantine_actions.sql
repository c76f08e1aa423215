-- Quarantine entries an operator acts on: marked for retry (the runner or
-- consumer applies the event again on its next pass) or skipped, with the
-- time of the latest failure and how each entry was resolved. Leases keep
-- their period, so a reader can tell how long an expired lease has waited
-- for a new owner.
ALTER TABLE quarantine ADD COLUMN last_failed_at INTEGER;     -- unix nanoseconds; NULL: created_at
ALTER TABLE quarantine ADD COLUMN retry_requested_at INTEGER; -- set by a retry request, cleared by the attempt
ALTER TABLE quarantine ADD COLUMN resolution TEXT NOT NULL DEFAULT ''; -- applied, retried, skipped, ...
ALTER TABLE leases ADD COLUMN ttl_ms INTEGER NOT NULL DEFAULT 0;      -- the holder's lease period; 0: unknown
