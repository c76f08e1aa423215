package driver

import "context"

// Tables is what a projection's rebuild asks of read-model tables (never
// the store's own: the store refuses those before it asks), and the read
// pool's query-only sessions.
type Tables interface {
	// DropTable drops a table and its indexes; no such table is no error.
	DropTable(ctx context.Context, q Querier, name string) error
	// CountRows counts a table's rows.
	CountRows(ctx context.Context, q ReadQuerier, table string) (int64, error)
	// CountUnmatched counts the rows of table a that no row of b matches
	// on the columns key (NULL matching NULL).
	CountUnmatched(ctx context.Context, q ReadQuerier, a, b string, key []string) (int64, error)
	// CountChanged counts the rows of a and b that match on key but
	// differ in a column of rest (NULL matching NULL).
	CountChanged(ctx context.Context, q ReadQuerier, a, b string, key, rest []string) (int64, error)
	// CountSurplus compares a and b, tables of the same columns cols, as
	// multisets of whole rows: how many rows a has beyond b.
	CountSurplus(ctx context.Context, q ReadQuerier, a, b string, cols []string) (int64, error)
	// QueryOnly makes the session of q (one connection) refuse writes,
	// or accept them again.
	QueryOnly(ctx context.Context, q Querier, on bool) error
}
