package store

// Dialect names the database engine a store runs on. A projection
// handler writes its own SQL through a Tx; tx.Dialect() tells it which
// engine runs that SQL, and a projection table may declare its DDL per
// dialect (projection.Table.Schemas).
//
// What a handler may rely on whatever the dialect: the Tx is a
// database/sql transaction (ExecContext, QueryContext, QueryRowContext,
// database/sql types); its writes commit with the checkpoint or not at
// all; tx.Nested undoes a scope's writes and keeps the transaction usable;
// tx.TableExists answers from the engine's catalog; ? placeholders work
// on both (numbered $1..$n on PostgreSQL by the store), and so does an
// upsert that names its table by an alias (INSERT INTO <table> AS t ...
// DO UPDATE SET n = t.n + 1). What differs, and is the handler's to
// choose by tx.Dialect(): functions (SQLite's scalar max is PostgreSQL's
// GREATEST) and types. docs/handler-sql.md has the rules.
type Dialect string

const (
	// DialectSQLite is modernc.org/sqlite: one file.
	DialectSQLite Dialect = "sqlite"
	// DialectPostgres is PostgreSQL, through pgx: a store opened on a
	// postgres:// address.
	DialectPostgres Dialect = "postgres"
)

// Known reports whether d is one of the dialects above.
func (d Dialect) Known() bool { return d == DialectSQLite || d == DialectPostgres }

// Dialect returns the engine the transaction runs on. It is the store's
// for its lifetime, so it may be read at any time, also after the
// closure returned.
func (tx *Tx) Dialect() Dialect { return Dialect(tx.s.ex.Dialect()) }

// Dialect returns the engine the snapshot reads from (see Tx.Dialect).
func (r *ReadTx) Dialect() Dialect { return Dialect(r.ex.Dialect()) }
