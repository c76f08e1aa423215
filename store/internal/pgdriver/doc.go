// Package pgdriver holds the PostgreSQL pieces of eventlite's store that do
// not depend on the storage seam's interfaces (package driver): reading a
// postgres:// address, opening a pool whose sessions carry the store's
// settings, the log schema and its migrations, and the global-position
// mechanism with an append and a follower read built on it. The
// PostgreSQL driver, which implements driver.Driver and driver.Executor,
// will be made of these; until it is, nothing outside this package uses
// it.
//
// # Positions
//
// Every write transaction runs READ COMMITTED and its first statement locks
// the log's one head row (SELECT position FROM log_head FOR UPDATE), the
// equivalent of SQLite's BEGIN IMMEDIATE. The positions it hands out are
// head+1..head+n, and the head row is moved in the same transaction. So
// write transactions take positions one after another and commit in that
// order: positions are strictly increasing in commit order, a rolled back
// transaction gives its positions back (no gap, no reuse), and a follower
// that reads past position p can never later find an event at or below p.
// A sequence or identity column cannot keep that promise: its value is
// taken at insert and becomes visible at commit, so a slower transaction
// can fill a position that a reader already passed.
//
// # Example
//
//	db, err := pgdriver.Open(ctx, "postgres://app@db:5432/app?eventlite_schema=orders", nil)
//	if err != nil { ... }
//	defer db.Close()
//	if err := db.Migrate(ctx); err != nil { ... }
//	res, err := db.Append(ctx, "acme", "order-1", pgdriver.NoStream, rows)
//	recs, err := db.ReadAfter(ctx, 0, 100)
//
// Passwords never appear in this package's errors: addresses are shown
// through Redact. The package does not log.
package pgdriver
