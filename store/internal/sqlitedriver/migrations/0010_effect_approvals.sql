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
