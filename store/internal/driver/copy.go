package driver

import "context"

// CopySource is what backup.Copy reads from the store it copies:
// every row of each of the store's tables, in one snapshot (the store
// passes the Querier of one read transaction), the last position handed
// out and the leases held now. It is not part of Executor: the store
// asks an engine for it by type assertion, and an engine that cannot be
// copied from lacks it.
type CopySource interface {
	// CopyRows calls fn with every row of table, the values of cols in
	// that order, the rows ordered by the columns of order (the table's
	// primary key). A value is what the engine stored, whatever the
	// column declares: int64, float64, string, []byte or nil (NULL). fn
	// may keep the slice and its values.
	CopyRows(ctx context.Context, q ReadQuerier, table string, cols, order []string, fn func(row []any) error) error
	// CopyColumns is table's shape as CopyRows gives its rows: the
	// table's columns, except that where the engine keeps several in one
	// column it names those it joins (the events' attributes on SQLite),
	// so that every engine gives the same columns.
	CopyColumns(ctx context.Context, q ReadQuerier, table string) (TableShape, error)
	// CopyCount counts the rows of table.
	CopyCount(ctx context.Context, q ReadQuerier, table string) (int64, error)
	// CopySequence reads the last position handed out, by the rule the
	// engine's appends follow: the next append takes the position after
	// it. It is at least the newest position in the log, and above it
	// when a scavenge or a restore left positions that were handed out
	// but are no longer stored. 0: none was.
	CopySequence(ctx context.Context, q ReadQuerier) (int64, error)
	// CopyLiveLeases lists the leases held now: an owner, and an expiry
	// after the engine's clock, in resource order.
	CopyLiveLeases(ctx context.Context, q ReadQuerier) ([]LiveLease, error)
}

// CopyTarget is what backup.Copy writes into: the rows, in the
// writer's transaction, of a store that holds none yet. A target also
// reads (CopySource) so that the copy is checked on both sides by the
// same code. Not part of Executor either.
type CopyTarget interface {
	CopySource
	// CopyInsert inserts rows into table, each holding the values of
	// cols in that order, as CopyRows gives them (from any engine). It
	// converts each value to the column's type and refuses, wrapping
	// ErrUnsupported, a value the column cannot hold exactly (text that
	// is not UTF-8 or holds a NUL byte, a fraction in an integer
	// column).
	CopyInsert(ctx context.Context, q Querier, table string, cols []string, rows [][]any) error
	// CopyDelete deletes every row of table: the rows a new database's
	// migration seeds, which the copy replaces with the source's.
	CopyDelete(ctx context.Context, q Querier, table string) error
	// CopySetSequence raises the last position handed out to pos (never
	// lowers it): the next append takes pos+1.
	CopySetSequence(ctx context.Context, q Querier, pos int64) error
	// CopyIdentity moves the sequence of table's identity column col
	// past the largest value stored, so that the next row the engine
	// numbers itself takes a new id.
	CopyIdentity(ctx context.Context, q Querier, table, col string) error
}

// LiveLease is a lease held when it was read.
type LiveLease struct {
	Resource, Owner string
	ExpiresAt       int64 // unix milliseconds, the engine's clock
}
