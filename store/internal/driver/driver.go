// Package driver is the storage seam: the interface between the store's
// logic and the database engine that keeps its data.
//
// Above the seam, once for every engine, package store holds what makes an
// event store: input validation, the group commit, idempotent retries,
// leases and their fences, the outbox and its ledgers, rebuild bookkeeping
// and every error a caller sees. Below it, a driver holds every statement,
// pragma, catalog query and migration of one engine: SQLite
// (sqlitedriver) and PostgreSQL (pgdriver).
//
// A Driver is an engine's lifecycle: opening the writer's and the read
// pools, preparing and migrating a database, the commit counter the
// store's change poller compares. An Executor has one method per store
// operation. Every read-then-write sequence that is correct on SQLite
// only because SQLite serializes writers (the expected-version check of
// an append, taking a lease, a fence check with the write it guards) is
// one Executor method, so that a driver can make it atomic in its own
// way: SQLite by its write lock, PostgreSQL by a row lock. Where the
// public API splits a decision across calls of one transaction (a
// consumer reads an aggregate's version, applies the event, then sets
// the version), the read's contract is to hold what it read until commit.
//
// Methods take the Querier they run on as an argument: the writer's
// connection inside its write transaction, a read snapshot, or the read
// pool. The store chooses; the driver never begins or ends a transaction
// inside an operation unless the method says so. An Executor holds no
// state of its own per call, so one value serves every goroutine.
//
// Errors: a driver returns the engine's errors wrapped, never replaced, and
// classifies them (Driver.Classify): a lock held past the wait is Busy, a unique
// or foreign key violation is Constraint, a file that is not the engine's
// is NotADatabase, a damaged one Corrupt. The store turns these into the
// errors its callers see (ErrBusy, ErrConflict, ErrDuplicate,
// ErrNotEventlite).
package driver

import (
	"context"
	"database/sql"
)

// Dialect names an engine. A projection handler writes its own SQL through
// the store's Tx and asks which engine runs it.
type Dialect string

const (
	// SQLite is modernc.org/sqlite: one file, one writer at a time.
	SQLite Dialect = "sqlite"
	// Postgres is PostgreSQL through pgx: many writers, a server.
	Postgres Dialect = "postgres"
)

// Querier is what an operation's statements run on. *sql.DB, *sql.Conn and
// *sql.Tx are Queriers, and so are the store's writer connection and read
// pool.
type Querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	ReadQuerier
}

// ReadQuerier is what an operation that only reads runs on.
type ReadQuerier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// Executor runs the store's operations on one engine. It is the
// composition of the areas below, each declared in its own file.
type Executor interface {
	// Dialect is the engine the executor speaks.
	Dialect() Dialect
	// Rebind returns a caller's query (an Update closure's, a handler's,
	// a View's) as the engine takes it: SQLite as given; PostgreSQL with
	// its ? placeholders numbered $1..$n (pgdriver's Rebind says which
	// ? are placeholders). It must not allocate for a query without ?.
	Rebind(query string) string
	Catalog
	Scavenge
	Space
	Retention
	Lifecycle
	Doctor
	Inventory
	Keys
	Appends
	Reads
	Status
	Tables
	Invariants
	Outbox
	Effects
	Operations
	Leases
	Checkpoints
	Consumers
	Holes
	Rebuilds
	Quarantine
}
