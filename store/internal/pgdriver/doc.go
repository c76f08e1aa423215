// Package pgdriver is eventlite's PostgreSQL driver: it implements the
// storage seam's driver.Driver and driver.Executor (package driver) on
// pgx through its database/sql adapter, as the store's public Tx is
// database/sql. store.Open chooses it for a postgres:// or postgresql://
// address; the shared suite (store/drivertest) proves it.
//
// The files follow the seam's areas, as the SQLite driver's do: driver.go
// (connections, session settings, error classes), migrate.go and
// migrations/ (the schema), catalog.go, append.go (the Writer), read.go
// and events.go (the Reader), notify.go (LISTEN/NOTIFY wake-ups), then one
// file per area of operations, and copy.go (the target of a copy from a
// SQLite file).
//
// # Schema and sessions
//
// The store's tables live in one schema: the address's eventlite_schema
// parameter (removed before pgx reads the address) or Options.Schema,
// default "eventlite". Every session's search_path is that schema, so
// statements name tables unqualified, and every write transaction sets it
// again with SET LOCAL, which holds behind a pooler in transaction mode.
// Such a pooler is not supported all the same: the writer and the readers
// prepare statements once per session and use them in later
// transactions, the session settings are startup parameters, and LISTEN
// needs its own session (docs/design.md, "Poolers").
// Passwords never appear in this package's errors: addresses are shown
// through Redact. The package does not log.
//
// # Positions
//
// Every write transaction runs READ COMMITTED and its first statement
// moves the commit counter of the log's one head row (BeginWriteSQL),
// which locks the row until the transaction ends: the equivalent of
// SQLite's BEGIN IMMEDIATE. The positions an append hands out are
// head+1..head+n, and the head row moves in the insert's own statement.
// So write transactions take positions one after another and commit in
// that order: positions are strictly increasing in commit order, a rolled
// back transaction gives its positions back (no gap, no reuse), and a
// follower that reads past position p can never later find an event at or
// below p. A sequence or identity column cannot keep that promise: its
// value is taken at insert and becomes visible at commit, so a slower
// transaction can fill a position that a reader already passed.
package pgdriver
