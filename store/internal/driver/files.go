package driver

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// Files is what an embedded engine does with a database file, outside
// Executor because only such an engine (SQLite) has one: the
// file-level mechanism of backup and restore (opening a database file
// that no store has open, copying a consistent snapshot of it page by
// page into a new file, copying a file into a database in place while
// other processes have it open, and the marks a restore leaves in the
// log), reading a file's header (inspect), and stamping its application
// id. A server engine (PostgreSQL) lacks it: its backups are the
// server's own tools. The store reaches it on the SQLite driver for
// Backup, Restore, Inspect and a copy's source, which refuse a
// PostgreSQL address first, and by type assertion on an open store's
// Executor for the application id.
//
// The store keeps what a user sees: which file is refused and why, the
// checks of a copy, progress, results and messages.
type Files interface {
	// OpenFile opens the database file at path on one connection of a
	// pool of its own, which the caller closes (the connection first).
	// With o.ReadOnly the file is never created or changed, and a
	// file the process may only read is opened too. An engine error is
	// returned as it is: Driver.Classify tells NotADatabase.
	OpenFile(ctx context.Context, path string, o FileOptions) (*sql.DB, *sql.Conn, error)
	// BeginFileRead begins a read transaction on conn whose first read
	// fixes the snapshot that every later read and CopyFile see. end
	// ends it; it may be called more than once.
	BeginFileRead(ctx context.Context, conn *sql.Conn) (end func(), err error)
	// PageSize reads the size in bytes of the database's pages, the unit
	// of CopyFile and CopyInto.
	PageSize(ctx context.Context, q ReadQuerier) (int64, error)
	// CopyFile copies the database of conn, as its read transaction (see
	// BeginFileRead) sees it, into the empty file dst, pagesPerStep
	// pages per step, calling progress after every step. Writers of the
	// source are not blocked. ctx's error comes back as it is, engine
	// errors wrapped.
	CopyFile(ctx context.Context, conn *sql.Conn, dst string, pagesPerStep int, progress CopyProgress) error
	// SealFile makes the database of conn (a copy that CopyFile wrote)
	// one self-contained file, with no journal or log file beside it
	// that a reader needs.
	SealFile(ctx context.Context, conn *sql.Conn) error
	// CopyInto replaces the database of conn with the database file
	// src, in place: every connection that has it open sees the new
	// content at its next transaction. It first puts the target in a
	// journal mode in which other connections read it while a writer
	// holds its lock (an empty new file takes srcPageSize first), and
	// refuses a target whose page size differs from srcPageSize and
	// cannot change in place (*PageSizeError). Then it takes the
	// target's write lock before it copies anything, failing with
	// *LockedError when another connection holds it past the busy
	// timeout, and calls locked under the lock: locked reads the target
	// on a connection of its own, as it is under the lock, and may write
	// to src. An error of locked ends the copy with the target unchanged
	// and comes back as it is, and so does ctx's. The copy commits once;
	// progress (in pages of srcPageSize) is called after every step.
	CopyInto(ctx context.Context, conn *sql.Conn, src string, srcPageSize int64, pagesPerStep int,
		locked func() error, progress CopyProgress) error
	// EventsUpTo counts the events at positions up to position and
	// reads the highest of them (0 for none), in one snapshot.
	EventsUpTo(ctx context.Context, q ReadQuerier, position int64) (count, highest int64, err error)
	// RaiseSequence raises the log's position sequence to at least
	// floor, so that the next append is given a position above it (in a
	// file of an old schema, wherever that schema keeps the sequence).
	RaiseSequence(ctx context.Context, q Querier, floor int64) error
	// RecordRestoreHole records the positions from..to as a hole that
	// detectedBy left, at now (unix nanoseconds); a hole recorded at
	// from is widened to to and takes detectedBy. In a file of a schema
	// that records no holes it does nothing.
	RecordRestoreHole(ctx context.Context, q Querier, from, to int64, detectedBy string, now int64) error
	// FileHeader reads the schema version (0 for a database eventlite
	// never opened) and application id of the database file at path
	// without creating, migrating or otherwise changing it.
	FileHeader(ctx context.Context, path string) (FileHeader, error)
	// SetApplicationID stamps the database's application id; it
	// commits with the transaction q is in.
	SetApplicationID(ctx context.Context, q Querier, id int32) error
}

// FileOptions tell OpenFile how to open a file.
type FileOptions struct {
	// ReadOnly never creates or changes the file.
	ReadOnly bool
	// BusyTimeout is how long a statement waits for a lock another
	// connection holds; 0 does not wait.
	BusyTimeout time.Duration
	// Durable makes every commit durable on disk before it returns.
	Durable bool
}

// CopyProgress is told, after every step of a copy, how many of the
// total pages are copied and their size in bytes.
type CopyProgress func(done, total, pageSize int64)

// FileHole is a recorded hole: the positions From..To.
type FileHole struct{ From, To int64 }

// PageSizeError is CopyInto's refusal of a target whose page size cannot
// change in place to the source's. Nothing was changed.
type PageSizeError struct {
	Target, Source int64 // page sizes in bytes
}

func (e *PageSizeError) Error() string {
	return fmt.Sprintf("the target's pages are %d bytes and the source's %d, which a copy in place cannot change", e.Target, e.Source)
}

// LockedError is CopyInto's failure to take the target's write lock:
// another connection held it past the busy timeout. Nothing was changed.
type LockedError struct{ Err error }

func (e *LockedError) Error() string { return e.Err.Error() }

// Unwrap returns the engine's error.
func (e *LockedError) Unwrap() error { return e.Err }
