-- A tenant's events in position order: a read of one tenant's log,
-- forward or newest first (direction=backward), and the newest position
-- of a tenant walk this index instead of the (tenant, event_id) index
-- and a sort of every event of the tenant. An append adds one entry at
-- the right end of its tenant's range.
-- Idempotent: a file set back to an older schema runs it again.
CREATE INDEX IF NOT EXISTS events_tenant_position ON events (tenant, position);
