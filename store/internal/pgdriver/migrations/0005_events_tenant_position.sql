-- A tenant's events in position order: a read of one tenant's log,
-- forward or newest first (direction=backward), and the newest position
-- of a tenant walk this index instead of filtering the whole log.
-- Idempotent: a schema set back to an older version runs it again.
CREATE INDEX IF NOT EXISTS events_tenant_position ON events (tenant, position);
