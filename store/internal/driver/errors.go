package driver

import "errors"

// Class is what kind of failure an engine error is, as far as the store's
// logic cares.
type Class uint8

const (
	// Other is every error the store does not treat specially.
	Other Class = iota
	// Busy: the engine's lock was held by another writer past the wait
	// (SQLITE_BUSY, SQLITE_LOCKED; PostgreSQL's lock_not_available). The
	// caller may retry.
	Busy
	// Constraint: a unique, primary key, check or foreign key constraint
	// refused a write.
	Constraint
	// NotADatabase: the file is not a database of the engine.
	NotADatabase
	// Corrupt: the engine found the database damaged.
	Corrupt
	// ConnectionLost: a server ended the session (it shut down, the
	// network failed, or a timeout of the session's ended it). The
	// connection is unusable; a new one may succeed.
	ConnectionLost
	// Statement: the engine refused a statement's text: a syntax error,
	// an ambiguous column or one that does not exist (PostgreSQL 42601,
	// 42702, 42703; SQLite's "syntax error", "ambiguous column name",
	// "no such column"). The usual causes are SQL written for the other
	// engine: the store adds a hint to a caller's statement failing so.
	Statement
)

// ErrUnsupported is returned by a driver for an operation its engine does
// not offer (for example a file-level backup on a server).
var ErrUnsupported = errors.New("not supported by this database engine")
