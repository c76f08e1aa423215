package driver

import "context"

// Lifecycle is what deleting and truncating a stream write besides the
// lifecycle event the store appends.
//
// A delete or truncate reads the stream's state (StreamLifecycle),
// decides, appends its event through the store's append path (which
// checks the expected version) and then marks the stream (MarkDeleted,
// SetFirstVersion), all in one write transaction. Nothing may change the
// stream's row between the read and the mark: SQLite holds its only
// writer for the transaction; another engine must lock the row in
// StreamLifecycle until the transaction ends (PostgreSQL: SELECT ... FOR
// UPDATE).
type Lifecycle interface {
	// StreamLifecycle reads a stream's version (0 without events), its
	// deleted mark (0 live, 1 soft, 2 hard) and the version its reads
	// start at, and holds its row until the transaction ends (see
	// above). found is false for no such stream.
	StreamLifecycle(ctx context.Context, q Querier, tenant, stream string) (st StreamLifecycleState, found bool, err error)
	// MarkDeleted marks a stream deleted (mark as in StreamLifecycle),
	// makes its reads start at first (after its tombstone) and drops its
	// snapshots, atomically with the transaction it runs in.
	MarkDeleted(ctx context.Context, q Querier, tenant, stream string, mark, first int64) error
	// SetFirstVersion makes a stream's reads start at first.
	SetFirstVersion(ctx context.Context, q Querier, tenant, stream string, first int64) error
}

// StreamLifecycleState is what a delete or truncate checks of a stream.
type StreamLifecycleState struct {
	Version, Deleted, First int64
}
