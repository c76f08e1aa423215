// Package sqlitedriver is the store's SQLite driver (modernc.org/sqlite):
// every SQLite statement, pragma, catalog query and migration of the store
// is here, behind the interfaces of package driver.
//
// It is one of two drivers: PostgreSQL's is internal/pgdriver; what both
// share is in internal/driver.
package sqlitedriver

import (
	"errors"
	"strings"

	"github.com/eventlite/eventlite/store/internal/driver"
	"github.com/eventlite/eventlite/store/internal/driver/sqlshared"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// Exec is the SQLite Executor. It holds nothing: its methods run on the
// Querier they are given.
type Exec struct{ sqlshared.Exec[dialect] }

var (
	_ driver.Executor = Exec{}
	_ driver.Files    = Exec{}
)

// Dialect reports SQLite.
func (Exec) Dialect() driver.Dialect { return driver.SQLite }

// Rebind returns query unchanged: SQLite takes ? placeholders itself.
func (Exec) Rebind(query string) string { return query }

// Classify tells the engine's errors apart (the package function Classify).
func (Driver) Classify(err error) driver.Class { return Classify(err) }

// Classify tells SQLITE_BUSY and SQLITE_LOCKED (Busy), SQLITE_CONSTRAINT
// (Constraint), SQLITE_NOTADB (NotADatabase), SQLITE_CORRUPT (Corrupt)
// and a statement's syntax error, ambiguous or unknown column (Statement)
// from other errors.
func Classify(err error) driver.Class {
	var re *RemovedIDError
	if errors.As(err, &re) {
		return driver.Constraint
	}
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return driver.Other
	}
	switch se.Code() & 0xff {
	case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED:
		return driver.Busy
	case sqlite3.SQLITE_CONSTRAINT:
		return driver.Constraint
	case sqlite3.SQLITE_NOTADB:
		return driver.NotADatabase
	case sqlite3.SQLITE_CORRUPT:
		return driver.Corrupt
	case sqlite3.SQLITE_ERROR:
		// SQLite gives these one generic code: only the message tells
		// them apart.
		msg := se.Error()
		if strings.Contains(msg, "syntax error") || strings.Contains(msg, "ambiguous column name") || strings.Contains(msg, "no such column") {
			return driver.Statement
		}
	}
	return driver.Other
}
