package driver

import "context"

// Leases is the lease table: one holder per resource at a time, fenced by
// a token that grows with every new holder. Times are unix milliseconds
// by the engine's clock, one clock for every process that shares the
// database, read inside the operation.
type Leases interface {
	// AcquireLease takes the lease on resource for owner for ttlMs. A
	// lease that is absent, released or expired is taken with the next
	// token (1 for a new resource); owner's own live lease is renewed
	// with its token unchanged; a live lease of another owner is left
	// alone and returned with Held set. Reading the row and writing it
	// must be atomic against every other lease operation on the
	// resource: SQLite holds its write lock; PostgreSQL locks the row
	// (SELECT ... FOR UPDATE, or INSERT ... ON CONFLICT for a new one),
	// so that two owners never both take a lease or share a token.
	AcquireLease(ctx context.Context, q Querier, resource, owner string, ttlMs int64) (LeaseGrant, error)
	// RenewLease extends the lease held under f by ttlMs from now. It
	// returns ok false, writing nothing, when f is no longer the lease on
	// its resource (taken over or released); an expired lease that
	// nobody took is renewed. The match and the write are one conditional
	// update, atomic on any engine.
	RenewLease(ctx context.Context, q Querier, f Fence, ttlMs int64) (expiresAt int64, ok bool, err error)
	// ReleaseLease frees the lease held under f so that another owner may
	// take it at once; a lease no longer held under f is left alone.
	ReleaseLease(ctx context.Context, q Querier, f Fence) error
	// CheckFence reports whether f is the current, unexpired lease on its
	// resource. It runs first in a fenced write transaction, and the
	// answer must hold until that transaction commits: SQLite holds its
	// write lock; PostgreSQL locks the lease row (SELECT ... FOR SHARE or
	// FOR UPDATE), so that a new holder cannot take the lease while the
	// old one's writes are still to commit.
	CheckFence(ctx context.Context, q Querier, f Fence) (bool, error)
	// ListLeases lists every lease row by resource, none for an empty
	// table.
	ListLeases(ctx context.Context, q ReadQuerier) ([]LeaseRow, error)
}

// Fence names a held lease: a fenced write carries it. It holds when the
// lease row has this owner and token and has not expired by the engine's
// clock.
type Fence struct {
	Resource string
	Owner    string
	Token    int64
}

// LeaseGrant is the outcome of AcquireLease.
type LeaseGrant struct {
	// Held: another owner holds a live lease; nothing was written, and
	// Owner, Token and ExpiresAt are the holder's.
	Held      bool
	Owner     string
	Token     int64
	ExpiresAt int64 // unix ms
	Now       int64 // the engine's clock when the lease was read, unix ms
}

// LeaseRow is a lease as stored.
type LeaseRow struct {
	Resource   string
	Owner      string // "" when released
	Token      int64
	ExpiresAt  int64 // unix ms
	AcquiredAt int64 // unix ms
	Expired    bool  // by the engine's clock when read
}
