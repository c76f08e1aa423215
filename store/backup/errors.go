package backup

import (
	"errors"
	"fmt"
	"strings"

	"github.com/eventlite/eventlite/store/internal/pgaddr"
)

// Errors of Create and Restore (besides the store's ErrNotFound,
// ErrNotEventlite, ErrSchemaTooNew, ErrBusy and ErrPositionRange, which
// they return as store.Open would). The CLI maps all of them to exit 4
// but ErrRestoreUnverified (exit 8).
var (
	// ErrInvalid: a file to restore from, or a copy just made, fails a
	// backup's checks (integrity_check, the store's invariants, the head
	// and event count of the snapshot). Permanent: restore another
	// backup; a live store that fails them needs eventlite doctor.
	ErrInvalid = errors.New("the database fails a backup's checks")
	// ErrDestExists: the backup's destination exists. Pass Force (the
	// CLI's --force) to replace it, or choose another path.
	ErrDestExists = errors.New("backup destination exists")
	// ErrTargetNotEmpty: the database a restore would replace has
	// events, or the store a copy would write into has rows. Pass Force
	// (--force) to replace a restore's; a copy goes into a new schema.
	ErrTargetNotEmpty = errors.New("restore target has events")
	// ErrRestoreUnverified: a restore committed (the database was
	// replaced by the backup's content), and then its check of what
	// writers cannot change failed or could not run. Unlike every other
	// error of Restore, the target did change: run eventlite doctor on
	// it before serving from it.
	ErrRestoreUnverified = errors.New("the database was replaced by the restore, but its check after the commit failed")
)

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

// CheckError lists what a backup's checks found wrong in a file.
// errors.Is(err, ErrInvalid) holds for it.
type CheckError struct {
	Path     string
	Problems []string
}

func (e *CheckError) Error() string {
	return fmt.Sprintf("%v: %s: %s", ErrInvalid, e.Path, strings.Join(e.Problems, "; "))
}

// Unwrap lets errors.Is(err, ErrInvalid) match.
func (e *CheckError) Unwrap() error { return ErrInvalid }

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

// ErrFileOnly: an operation that works on a database file (Create,
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

// fileOnly refuses, with *FileOnlyError, an operation on a database file
// (op) that was given PostgreSQL addresses among addrs.
func fileOnly(op string, addrs ...string) error {
	for _, a := range addrs {
		if pgaddr.IsAddress(a) {
			return &FileOnlyError{Op: op, Address: pgaddr.Redact(a)}
		}
	}
	return nil
}
