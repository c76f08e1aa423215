package driver

import "context"

// Status is what the store keeps beside the events for its readers and
// runners: snapshots of aggregates, projections' status, and the sizes of
// its queues.
type Status interface {
	// LoadSnapshot reads the stream's snapshot of that state schema
	// version; ok is false when there is none.
	LoadSnapshot(ctx context.Context, q ReadQuerier, tenant, stream string, schemaVersion int) (snap SnapshotRow, ok bool, err error)
	// SaveSnapshot stores a snapshot unless one of the same schema
	// version and a version at least as high is stored: the check and
	// the write are one statement, so a concurrent older save never
	// replaces a newer snapshot.
	SaveSnapshot(ctx context.Context, q Querier, tenant, stream string, snap SnapshotRow) error
	// SetProjectionStatus records a projection's status, creating its
	// row when it has none.
	SetProjectionStatus(ctx context.Context, q Querier, name, status, detail string, now int64) error
	// Projections reads the record of the projection name, or of every
	// projection (in name order) when name is ""; none: an empty list.
	// The lease's figures are by the engine's clock, in milliseconds.
	Projections(ctx context.Context, q ReadQuerier, name string) ([]ProjectionRow, error)
	// QueueCounts counts open quarantine entries, deferred events and
	// unresolved version conflicts, and reads the oldest request for
	// approval's time (0 for none), in one statement.
	QueueCounts(ctx context.Context, q ReadQuerier) (QueueCounts, error)
	// EffectCounts counts the effect ledger's rows by kind and state.
	EffectCounts(ctx context.Context, q ReadQuerier) ([]EffectCount, error)
}

// SnapshotRow is a stored snapshot; CreatedAt in unix nanoseconds.
type SnapshotRow struct {
	SchemaVersion int
	Version       int64
	State         []byte
	CreatedAt     int64
}

// ProjectionRow is a projection's row with its checkpoint, quarantine and
// lease.
type ProjectionRow struct {
	Name, Status, Detail string
	UpdatedAt            int64 // unix nanoseconds
	Checkpoint           int64
	Quarantined          int
	LeaseOwner           string // "" when no lease row or no owner
	LeaseLive            bool
	LeaseExpiredForMs    int64 // now minus the lease's expiry; 0 without a lease
	LeaseTTLMs           int64 // 0 when not recorded
}

// QueueCounts are the sizes of the consumers' queues.
type QueueCounts struct {
	Quarantined, Deferred, Conflicts int64
	OldestAwaitingApproval           int64 // unix nanoseconds; 0 for none
}

// EffectCount is how many effects of a kind are in a state.
type EffectCount struct {
	Kind, State string
	N           int64
}
