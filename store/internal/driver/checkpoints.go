package driver

import "context"

// Checkpoints are the positions projections have applied up to.
type Checkpoints interface {
	// Checkpoint reads the named projection's position, 0 for none.
	// Inside a write transaction the value must hold until it commits
	// (SQLite: the write lock; PostgreSQL: SELECT ... FOR UPDATE), since
	// callers move a checkpoint from the one they read.
	Checkpoint(ctx context.Context, q ReadQuerier, name string) (int64, error)
	// SetCheckpoint writes the named projection's position (inserting or
	// replacing it), with the fence's token, or 0 when fence is nil. With
	// a fence, the fence check (Leases.CheckFence) and the write are one
	// operation: ok is false, and nothing is written, when the fence is
	// stale, and the check must hold until the transaction commits
	// (SQLite: the write lock; PostgreSQL: the lease row locked FOR
	// SHARE). now is unix nanoseconds.
	SetCheckpoint(ctx context.Context, q Querier, name string, position int64, fence *Fence, now int64) (ok bool, err error)
	// Checkpoints lists every checkpoint by name, an empty map for none.
	Checkpoints(ctx context.Context, q ReadQuerier) (map[string]int64, error)
}
