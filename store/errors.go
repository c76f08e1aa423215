package store

import (
	"errors"
	"fmt"
	"strings"

	"github.com/eventlite/eventlite/envelope"
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

// Errors of Backup and Restore (and ErrNotEventlite, in readonly.go).
// The CLI maps all of them to exit 4 but ErrRestoreUnverified (exit 8).
var (
	// ErrBackupInvalid: a file to restore from, or a copy just made,
	// fails a backup's checks (integrity_check, the store's invariants,
	// the head and event count of the snapshot). Permanent: restore
	// another backup; a live store that fails them needs eventlite doctor.
	ErrBackupInvalid = errors.New("the database fails a backup's checks")
	// ErrDestExists: the backup's destination exists. Pass Force (the
	// CLI's --force) to replace it, or choose another path.
	ErrDestExists = errors.New("backup destination exists")
	// ErrTargetNotEmpty: the database a restore would replace has
	// events. Pass Force (--force) to replace them.
	ErrTargetNotEmpty = errors.New("restore target has events")
	// ErrRestoreUnverified: a restore committed (the database was
	// replaced by the backup's content), and then its check of what
	// writers cannot change failed or could not run. Unlike every other
	// error of Restore, the target did change: run eventlite doctor on
	// it before serving from it.
	ErrRestoreUnverified = errors.New("the database was replaced by the restore, but its check after the commit failed")
)

// ErrPositionRange: a position past envelope.MaxPosition, the highest a
// store hands out: an append the log has no positions left for (nothing
// is stored), or a restore's MinSequence beyond it (nothing changed).
// Permanent.
var ErrPositionRange = errors.New("position out of range")

// PositionRangeError names what would pass envelope.MaxPosition.
// errors.Is(err, ErrPositionRange) holds for it.
type PositionRangeError struct {
	Field  string // the option asked beyond it ("RestoreOptions.MinSequence"); "" for an append
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

// RestoreUnverifiedError is a restore whose copy committed, followed by a
// failed check. errors.Is(err, ErrRestoreUnverified) holds for it, and
// errors.Is and errors.As see Err (a reading error) too.
type RestoreUnverifiedError struct {
	Path     string
	Problems []string // what the check found wrong; none when Err is set
	Err      error    // the check could not run
}

func (e *RestoreUnverifiedError) Error() string {
	what := strings.Join(e.Problems, "; ")
	if e.Err != nil {
		what = e.Err.Error()
	}
	return fmt.Sprintf("%v: %s: %s: the database holds the backup's content now, not its old one; run eventlite doctor on it before serving from it",
		ErrRestoreUnverified, e.Path, what)
}

// Unwrap lets errors.Is(err, ErrRestoreUnverified) match, and Err.
func (e *RestoreUnverifiedError) Unwrap() []error {
	if e.Err != nil {
		return []error{ErrRestoreUnverified, e.Err}
	}
	return []error{ErrRestoreUnverified}
}

// BackupCheckError lists what a backup's checks found wrong in a file.
// errors.Is(err, ErrBackupInvalid) holds for it.
type BackupCheckError struct {
	Path     string
	Problems []string
}

func (e *BackupCheckError) Error() string {
	return fmt.Sprintf("%v: %s: %s", ErrBackupInvalid, e.Path, strings.Join(e.Problems, "; "))
}

// Unwrap lets errors.Is(err, ErrBackupInvalid) match.
func (e *BackupCheckError) Unwrap() error { return ErrBackupInvalid }

// TargetNotEmptyError: a restore refused to replace a database with
// events. errors.Is(err, ErrTargetNotEmpty) holds for it.
type TargetNotEmptyError struct {
	Path         string
	Events       int64
	HeadPosition int64
}

func (e *TargetNotEmptyError) Error() string {
	return fmt.Sprintf("%v: %s holds %d events (head position %d); it was left unchanged: pass --force (RestoreOptions.Force) to replace them",
		ErrTargetNotEmpty, e.Path, e.Events, e.HeadPosition)
}

// Unwrap lets errors.Is(err, ErrTargetNotEmpty) match.
func (e *TargetNotEmptyError) Unwrap() error { return ErrTargetNotEmpty }

// ErrFileOnly: an operation that works on a database file (Backup,
// Restore, Inspect) was given a PostgreSQL server's address. Permanent:
// a database on a server is backed up and restored with the server's own
// tools (pg_dump and pg_restore, or its base backups).
var ErrFileOnly = errors.New("not supported on PostgreSQL")

// FileOnlyError is ErrFileOnly with the facts: the operation and the
// address (its password replaced by "xxxxx"). errors.Is(err,
// ErrFileOnly) holds for it.
type FileOnlyError struct {
	Op      string // "backup", "restore" or "inspect"
	Address string // redacted
}

func (e *FileOnlyError) Error() string {
	instead := "back up and restore a PostgreSQL database with pg_dump and pg_restore, or the server's own backups"
	if e.Op == "inspect" {
		instead = "open the store to read its schema version (eventlite migrate or doctor)"
	}
	return fmt.Sprintf("%s %s: %v: it works on a SQLite database file; %s", e.Op, e.Address, ErrFileOnly, instead)
}

// Unwrap lets errors.Is(err, ErrFileOnly) match.
func (e *FileOnlyError) Unwrap() error { return ErrFileOnly }

// ErrNoPostgresDriver: Open (or Copy) was given a PostgreSQL address in
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
