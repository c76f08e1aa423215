// Package sqlshared holds what both engines run the same way: the
// statements, row scanning and logic of the store's operations that
// differ between SQLite and PostgreSQL only in placeholders, function
// names, type names or the spelling of an upsert. Each is written here
// once, with ? placeholders, and a driver's Exec embeds Exec[itsDialect]
// to take them; a driver defines a method itself only where the engines
// truly differ (positions and locking, migrations, notifications, the
// file operations, error codes, and the append and catch-up hot paths),
// and its method wins over the shared one of the same name.
//
// A fix to a shared statement is made once and the shared driver suite
// (store/drivertest) proves it on both engines.
package sqlshared

// Dialect is what a shared statement asks of its engine. A driver's
// Dialect is a struct without fields, so that Exec[D] is too and a
// driver's Exec{} literal stays valid.
type Dialect interface {
	// Bind returns a statement written with ? placeholders as the
	// engine takes it (PostgreSQL numbers them $1..$n).
	Bind(query string) string
	// QuoteIdent quotes a table or column name.
	QuoteIdent(name string) string
	// ForUpdate is appended to a SELECT whose rows must stay as read
	// until the transaction ends: " FOR UPDATE" where writers lock rows,
	// "" where the one writer's lock already holds everything.
	ForUpdate() string
	// ForUpdateOf is ForUpdate for the rows of one table of a join.
	ForUpdateOf(table string) string
	// Greatest and Least name the scalar maximum and minimum of their
	// arguments (SQLite's two-argument max and min).
	Greatest() string
	Least() string
	// NotDistinct is the operator under which NULL matches NULL.
	NotDistinct() string
	// HasPrefix is a condition that col starts with the text of a
	// parameter; it holds two ? placeholders, both the prefix.
	HasPrefix(col string) string
	// UserEvent is the condition on an events row (its column type)
	// that it is not one of eventlite's own.
	UserEvent() string
	// NowMillis is an expression of the engine's clock in Unix
	// milliseconds, read when the statement runs.
	NowMillis() string
	// Outbox is the outbox's shared statements in the engine's
	// spelling, built once (NewOutboxSQL).
	Outbox() *OutboxSQL
	// ScavengeBatch names the temporary table of a scavenge batch's
	// positions (the driver's LoadScavengeBatch fills it).
	ScavengeBatch() string
	// OutboxRowOf joins an event e to its outbox row o (NULLs when it
	// has none), as the engine walks it best for a read of many events.
	OutboxRowOf() string
	// HasExtensions holds for an events row (its columns unqualified)
	// that has extensions; ErasureKey is its erasurekey extension, NULL
	// for none.
	HasExtensions() string
	ErasureKey() string
	// CopyColumn is the SQL a copy reads column col of table by.
	CopyColumn(table, col string) string
	// SelectEvents and SelectStreamEvents are the driver's select of
	// the events' columns, the second without the tenant and stream;
	// EventScanner and StreamEventScanner scan their rows.
	SelectEvents() string
	SelectStreamEvents() string
	EventScanner() EventScanner
	StreamEventScanner(tenant, stream string) EventScanner
	// Int64 wraps an expression whose type must be a 64-bit integer
	// (PostgreSQL's SUM of bigint is numeric; a bare parameter it cannot
	// type from its context would be text).
	Int64(expr string) string
}

// Exec is the store's operations both engines run the same way. A
// driver's Exec embeds it with its own Dialect.
type Exec[D Dialect] struct{}

// bind is D's Bind.
func (Exec[D]) bind(query string) string {
	var d D
	return d.Bind(query)
}

// dialect is D's value.
func (Exec[D]) dialect() D {
	var d D
	return d
}

// scanner is a *sql.Row or *sql.Rows.
type scanner = Scanner
