package store

import (
	"errors"
	"fmt"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/store/internal/driver"
)

// Sentinel errors. Decide with errors.Is; the typed errors below carry the
// facts. Retryable tells which ones a retry may cure.
var (
	// ErrConflict: the expected version did not hold. Permanent for the
	// same decision: reload the stream and decide again.
	ErrConflict = errors.New("version conflict")
	// ErrDuplicate: an event id that is already stored was reused in a way
	// that is not a retry of the same append. Permanent.
	ErrDuplicate = errors.New("duplicate event id")
	// ErrNotFound: the stream (or other named thing) does not exist.
	ErrNotFound = errors.New("not found")
	// ErrStreamDeleted: the stream was hard-deleted: it is never written
	// or read again. Permanent.
	ErrStreamDeleted = errors.New("stream deleted")
	// ErrBusy: the database stayed locked by another process past the busy
	// timeout. Retryable.
	ErrBusy = errors.New("database busy")
	// ErrTxControl: SQL run through an Update closure's Tx tried to
	// begin, commit or roll back the transaction, or to open, release or
	// roll back to a savepoint. The store owns the transaction (appends
	// and closures sent together share it): return an error from the
	// closure to undo its writes, use tx.Nested for a scope that can be
	// undone alone. The statement was not run. Permanent.
	ErrTxControl = errors.New("transaction control inside an Update closure")
	// ErrClosed: the store is closed.
	ErrClosed = errors.New("store closed")
	// ErrSchemaTooNew: the file was written by a newer eventlite.
	ErrSchemaTooNew = errors.New("database schema is newer than this binary")
	// ErrInvalidEvent and ErrTooLarge are envelope's, repeated here so
	// store users need not import envelope to test for them. Permanent.
	ErrInvalidEvent = envelope.ErrInvalidEvent
	ErrTooLarge     = envelope.ErrTooLarge
)

// Retryable reports whether err is transient: the same call may succeed
// later (ErrBusy). Conflicts, duplicates and invalid input are permanent.
func Retryable(err error) bool {
	return errors.Is(err, ErrBusy)
}

// ConflictError reports a failed expected-version check.
// errors.Is(err, ErrConflict) holds for it.
type ConflictError struct {
	Tenant   string
	Stream   string
	Expected Expected
	Actual   int64 // the stream's version; 0 when it does not exist
}

func (e *ConflictError) Error() string {
	actual := fmt.Sprintf("actual version %d", e.Actual)
	if e.Actual == 0 {
		actual = "the stream does not exist"
	}
	return fmt.Sprintf("append to %q (tenant %s): expected %s, but %s", e.Stream, e.Tenant, e.Expected, actual)
}

// Unwrap lets errors.Is(err, ErrConflict) match.
func (e *ConflictError) Unwrap() error { return ErrConflict }

// DuplicateError reports a reused event id. errors.Is(err, ErrDuplicate)
// and errors.Is(err, ErrInvalidEvent) hold for it: it is bad input.
type DuplicateError struct {
	Tenant  string
	EventID string
	Reason  string
}

func (e *DuplicateError) Error() string {
	return fmt.Sprintf("event id %q (tenant %s) is already used: %s; give the event a new id", e.EventID, e.Tenant, e.Reason)
}

// Unwrap lets errors.Is match ErrDuplicate and ErrInvalidEvent.
func (e *DuplicateError) Unwrap() []error { return []error{ErrDuplicate, ErrInvalidEvent} }

// InvariantError lists broken store invariants (see CheckInvariants).
type InvariantError struct {
	Problems []string
}

func (e *InvariantError) Error() string {
	return fmt.Sprintf("%d store invariant(s) broken: %q", len(e.Problems), e.Problems)
}

// ErrUnsupported: the engines or the data cannot make the operation: a
// store on PostgreSQL asked for what only a SQLite file has (its
// application id), a copy (package store/backup) from anything but a
// SQLite file or into anything but PostgreSQL, or a value the target's
// column cannot hold exactly (text that is not UTF-8, an event time
// outside the years 1677-2262). Permanent.
var ErrUnsupported = driver.ErrUnsupported

// ErrPositionRange: a position past envelope.MaxPosition, the highest a
// store hands out: an append the log has no positions left for (nothing
// is stored), or a restore's MinSequence beyond it (nothing changed).
// Permanent.
var ErrPositionRange = errors.New("position out of range")

// PositionRangeError names what would pass envelope.MaxPosition.
// errors.Is(err, ErrPositionRange) holds for it.
type PositionRangeError struct {
	Field  string // the option asked beyond it ("backup.RestoreOptions.MinSequence"); "" for an append
	Events int    // an append's events
	Value  int64  // the option's value, or the last position the log handed out
	Max    int64  // envelope.MaxPosition
}

func (e *PositionRangeError) Error() string {
	if e.Field != "" {
		return fmt.Sprintf("%v: %s %d is outside 0..%d, the positions a store hands out; nothing was changed", ErrPositionRange, e.Field, e.Value, e.Max)
	}
	return fmt.Sprintf("%v: an append of %d events: the log has handed out positions up to %d, and %d is the highest a store hands out; nothing was stored",
		ErrPositionRange, e.Events, e.Value, e.Max)
}

// Unwrap lets errors.Is(err, ErrPositionRange) match.
func (e *PositionRangeError) Unwrap() error { return ErrPositionRange }

// ErrNoPostgresDriver: Open (or backup.Copy) was given a PostgreSQL address in
// a program that does not link the PostgreSQL driver. Permanent for the
// binary: import store/postgres and rebuild. The error that wraps it
// names the address, its password replaced by "xxxxx", and the import.
var ErrNoPostgresDriver = errors.New("the PostgreSQL driver is not linked into this program")

// postgresImport is the package a program imports to open PostgreSQL
// addresses.
const postgresImport = "github.com/eventlite/eventlite/store/postgres"

// noPostgresDriver is ErrNoPostgresDriver for the address red (redacted).
func noPostgresDriver(red string) error {
	return fmt.Errorf("%s: %w: add import _ %q to the program and rebuild it", red, ErrNoPostgresDriver, postgresImport)
}
