package driver

import "context"

// Lifecycle deletes and truncates streams. Each is a read-then-write
// sequence that must be atomic: the driver reads the stream's state and
// hands it to the store's apply, which checks it (the stream exists, is
// not deleted, a truncate's version is in range) and appends the
// lifecycle event through the store's append path (which checks the
// expected version); then the driver marks the stream. Nothing may change
// the stream's row between the read and the mark: SQLite holds its only
// writer for the whole write transaction; another engine locks the row
// when it reads it, until the transaction ends (PostgreSQL: SELECT ...
// FOR UPDATE).
//
// An error of apply is returned unchanged, and the driver writes nothing
// after it.
type Lifecycle interface {
	// DeleteStream deletes a stream: after apply appended its tombstone
	// (apply returns the tombstone's version), it sets the stream's
	// deleted mark (1 soft, 2 hard), makes its reads start after the
	// tombstone and drops its snapshots.
	DeleteStream(ctx context.Context, q Querier, tenant, stream string, mark int64, apply LifecycleApply) error
	// TruncateStream truncates a stream: after apply appended the
	// truncation event, it makes the stream's reads start at before.
	TruncateStream(ctx context.Context, q Querier, tenant, stream string, before int64, apply LifecycleApply) error
	// UndeleteStream clears a stream's deleted mark, leaving where its
	// reads start; it reports whether the stream had a mark.
	UndeleteStream(ctx context.Context, q Querier, tenant, stream string) (bool, error)
	// DeletedStreams lists the streams whose id starts with prefix that
	// carry a deleted mark, in tenant and stream order.
	DeletedStreams(ctx context.Context, q ReadQuerier, prefix string) ([]DeletedStream, error)
}

// DeletedStream is a stream with its deleted mark (1 soft, 2 hard).
type DeletedStream struct {
	Tenant, Stream string
	Mark           int64
}

// LifecycleApply is the store's part of a delete or truncate: it checks
// the stream's state as read (found is false for no such stream),
// appends the lifecycle event and returns its version.
type LifecycleApply func(st StreamLifecycleState, found bool) (version int64, err error)

// StreamLifecycleState is what a delete or truncate checks of a stream:
// its version (0 without events), its deleted mark (0 live, 1 soft, 2
// hard) and the version its reads start at.
type StreamLifecycleState struct {
	Version, Deleted, First int64
}
