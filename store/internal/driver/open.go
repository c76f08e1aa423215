package driver

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// Driver is an engine's lifecycle: how the store opens a database,
// prepares and migrates it, frames its write transactions, learns of
// other processes' commits and reads the engine's settings. The store
// decides what to make of the answers (which file to refuse, which error
// a caller sees, when to retry, what to log); a Driver only states facts
// and runs statements. A Driver holds no state, so one value serves every
// store.
type Driver interface {
	// Dialect is the engine the driver opens.
	Dialect() Dialect
	// Executor returns the engine's store operations.
	Executor() Executor
	// Classify returns the Class of one of the engine's errors (looking
	// through wrapping), and Other for nil, for an error the engine
	// does not treat specially and for one that is not the engine's:
	// the engines' error types are disjoint.
	Classify(err error) Class

	// OpenWriter opens the pool of the store's writer: one connection,
	// kept open for the store's life, on which every write transaction
	// runs. It does not connect: the store's first use does, so that
	// the store tells a file that is not a database (Classify: NotADatabase) from
	// other failures.
	OpenWriter(cfg OpenConfig) (*sql.DB, error)
	// OpenReader opens the read pool of conns connections, which never
	// write. Like OpenWriter it does not connect.
	OpenReader(cfg OpenConfig, conns int) (*sql.DB, error)
	// InitNew prepares a database that holds nothing yet, before the
	// first migration creates a table: settings the engine takes only
	// on an empty database.
	InitNew(ctx context.Context, q Querier) error
	// EnableWAL switches the database to the journal several processes
	// write and read concurrently in. The engine may refuse at once with
	// a Busy error while another process does the same, without waiting
	// for the lock: the store retries. A no-op for an engine without the
	// notion.
	EnableWAL(ctx context.Context, q Querier) error

	Migrator

	// The writer's transactions begin and end through the Writer that
	// the Executor prepares on the writer's connection (PrepareWriter);
	// read snapshots are database/sql read-only transactions on the read
	// pool that Catalog.StartSnapshot pins.

	// CommitCounter reads a number that changes when another connection
	// (another process included) commits. Compare only values read on
	// one connection q: SQLite's counter is per connection.
	CommitCounter(ctx context.Context, q ReadQuerier) (int64, error)
	// SettingNames are the engine settings a diagnostic reports for each
	// connection, in the order it reports them.
	SettingNames() []string
	// Setting reads one of SettingNames as the engine prints it.
	Setting(ctx context.Context, q ReadQuerier, name string) (string, error)
}

// Notifier is a Driver whose engine can wake a connection when another
// connection commits a write (PostgreSQL: LISTEN/NOTIFY). The store's
// change poller waits on it between its reads of the commit counter,
// which still decides: a wake-up is only a hint to read now, and without
// one (a pooler in transaction mode drops them) the poller reads every
// PollInterval as before.
type Notifier interface {
	// Listen asks the engine to wake conn at every commit of a write
	// transaction on the store's database.
	Listen(ctx context.Context, conn *sql.Conn) error
	// WaitWake blocks until a wake-up arrives on conn (true) or ctx
	// ends (false, nil). After an error conn cannot wait any more.
	WaitWake(ctx context.Context, conn *sql.Conn) (bool, error)
}

// OpenConfig is how the store wants a database opened.
type OpenConfig struct {
	// Path is the database file (for a server, its address).
	Path string
	// ReadOnly refuses every write on every connection; the file itself
	// stays writable, so that the engine may clean up after its last
	// connection closes.
	ReadOnly bool
	// Attach opens another user's file that a process has open: the
	// engine reads through that process's shared state and writes
	// nothing, not even its own bookkeeping files. Implies ReadOnly.
	Attach bool
	// BusyTimeout is how long a statement waits for another
	// connection's lock before failing Busy.
	BusyTimeout time.Duration
	// Synchronous is the durability level: "FULL" or "NORMAL".
	Synchronous string
	// JournalSizeLimit caps the write-ahead log kept after a checkpoint,
	// in bytes.
	JournalSizeLimit int64
	// Schema, for a server that keeps several stores in one database,
	// names the store's (PostgreSQL: the schema). Empty: the address's,
	// else the driver's default.
	Schema string
}

// Migrator is the engine's schema: its numbered migrations and how one is
// applied.
type Migrator interface {
	// Migrations returns the migrations in version order, versions 1..n:
	// n is the schema version the driver writes.
	Migrations() ([]Migration, error)
	// SchemaVersion reads the database's schema version: 0 for a
	// database no migration has touched.
	SchemaVersion(ctx context.Context, q ReadQuerier) (int, error)
	// ApplyMigration applies m in a write transaction of its own on q,
	// which must be one connection (not a pool), outside a transaction.
	// Under the write lock it reads the schema version again and, when
	// another process applied m meanwhile, commits nothing and returns
	// applied false; so processes that open one database at once apply
	// each migration exactly once. Otherwise m and the new schema
	// version commit together or not at all: an error, an interrupt
	// (ctx ending) or a crash leaves the database as it was. For a
	// migration that rebuilds a table (Migration.Rebuilds), rebuilding is
	// called first, under the lock, with the number of events it will
	// copy (not called if they cannot be counted). An error from m's
	// own statements, or from its commit, is a *MigrationError.
	ApplyMigration(ctx context.Context, q Querier, m Migration, rebuilding func(events int64)) (applied bool, err error)
}

// Migration is one numbered schema change.
type Migration struct {
	Version int
	Name    string // the file name: 0001_event_log.sql
	SQL     string
	// Rebuilds: the migration copies a table other tables reference
	// into a new one, which takes time on a large database.
	Rebuilds bool
}

// MigrationError is the failure of a migration's own statements or of
// its commit, as opposed to a failure to take the lock or read the
// version around it.
type MigrationError struct {
	Name string
	Err  error
}

func (e *MigrationError) Error() string { return fmt.Sprintf("migration %s: %v", e.Name, e.Err) }

// Unwrap returns the engine's error.
func (e *MigrationError) Unwrap() error { return e.Err }
