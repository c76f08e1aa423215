package driver

import (
	"context"
	"database/sql"
)

// Catalog is what the store asks of the engine's catalog on behalf of
// projection and replay, and of its own file checks: which tables exist,
// their columns, what a database holds, table renames, nested scopes and
// the start of a read snapshot.
type Catalog interface {
	// TableExists reports whether a table of that exact name exists.
	TableExists(ctx context.Context, q ReadQuerier, name string) (bool, error)
	// SchemaObjects reads, in one statement (one snapshot: another
	// process may be applying a migration, whose tables and version
	// commit together), how many schema objects the database holds, how
	// many of them are tables named in tables, and its schema version.
	SchemaObjects(ctx context.Context, q ReadQuerier, tables []string) (objects, named, version int, err error)
	// TableColumns reads a table's columns in declaration order and its
	// primary key in key order; Exists is false for no such table.
	TableColumns(ctx context.Context, q ReadQuerier, name string) (TableShape, error)
	// RenameTable renames a table; its indexes keep their names.
	RenameTable(ctx context.Context, q Querier, from, to string) error
	// Scope returns the statements of a nested scope at depth (1 for the
	// outermost): a savepoint the store names, never a caller.
	Scope(depth int) ScopeSQL
	// StartSnapshot makes a read transaction take its snapshot now, so
	// that every query of it sees one state.
	StartSnapshot(ctx context.Context, tx *sql.Tx) error
}

// TableShape is a table's columns and primary key.
type TableShape struct {
	Exists bool
	Cols   []string
	PK     []string // in primary key order
}

// ScopeSQL are the statements that open, undo and end a nested scope.
type ScopeSQL struct{ Open, Rollback, Release string }
