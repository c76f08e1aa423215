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
// server's own tools. Package store/backup calls it on the SQLite
// driver for Create, Restore, Inspect and a copy's source, which refuse
// a PostgreSQL address first; the store reaches it by type assertion on
// an open store's Executor for the application id.
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
	// RolledBackStreams compares the database of conn (a copy a restore
	// is about to copy in) with the database file replaced (the target,
	// read as it is under the restore's lock) and lists, in (tenant,
	// stream) order, every stream whose newest version in replaced is
	// above its newest in conn, a stream's newest version being the
	// highest its events or its recorded version gaps reach (streams
	// conn holds as hard-deleted included, HardDeleted set: their gap
	// is all that keeps those versions for a later restore of an
	// older file in which they live). A copy whose schema records no
	// version gaps lists none. It runs outside a transaction on conn (a
	// file engine attaches replaced); a server engine answers
	// ErrUnsupported.
	RolledBackStreams(ctx context.Context, conn *sql.Conn, replaced string) ([]RolledBackStream, error)
	// RecordVersionGap records, in the copy a restore writes (q, a
	// transaction on it), the versions r.Have+1..r.Had as a gap left by
	// detectedBy at now (unix nanoseconds), and inserts ev at version
	// r.Had+1 and position ev.Position: the stream's row is created
	// when r.Exists is false, its reads starting at ev's version. For
	// r.HardDeleted it records the gap alone (ev unused): the stream's
	// tombstone stays its newest event. A server engine answers
	// ErrUnsupported.
	RecordVersionGap(ctx context.Context, q Querier, r RolledBackStream, ev RestoredEvent, detectedBy string, now int64) error
	// VersionGapsDetectedBy lists the recorded version gaps that
	// detectedBy left (Have+1..Had each); none in a file that records
	// none.
	VersionGapsDetectedBy(ctx context.Context, q ReadQuerier, detectedBy string) ([]RolledBackStream, error)
	// TakeLeases takes every lease of the database of conn that a
	// holder has now for owner, for ttlMs, in one write transaction,
	// each with a new token (so that the holders' renewals and fenced
	// writes fail from then on), and returns the latest instant (unix
	// milliseconds, the engine's clock) at which a lease taken was to
	// expire, with the engine's clock now; 0, 0 when none was held. A
	// file without leases takes none. A server engine answers
	// ErrUnsupported.
	TakeLeases(ctx context.Context, conn *sql.Conn, owner string, ttlMs int64) (heldUntil, now int64, err error)
	// ReleaseLeases frees the leases of conn's database that owner holds.
	ReleaseLeases(ctx context.Context, conn *sql.Conn, owner string) error
	// FenceLeases sets, in the database of conn (a copy a restore is
	// about to copy in), every lease free with a token above both its
	// own and the database file replaced's, so that no holder of a
	// replaced lease writes under it after the restore and no token is
	// handed out twice. Outside a transaction on conn, as
	// RolledBackStreams. A server engine answers ErrUnsupported.
	FenceLeases(ctx context.Context, conn *sql.Conn, replaced string) error
	// RaiseStatsGeneration sets, in the database of conn (a copy a
	// restore is about to copy in), the stats generation above both its
	// own and the database file replaced's, so that a store with the file
	// open, which keeps counts at the generation it read, counts in full
	// after the restore (the copy's generation is its own, which the
	// restore's writes could move to the very value the store keeps). A
	// copy without the counter is left as it is. Outside a transaction on
	// conn, as FenceLeases. A server engine answers ErrUnsupported.
	RaiseStatsGeneration(ctx context.Context, conn *sql.Conn, replaced string) error
}

// StreamRestoredType is the type of the event a restore appends to a
// stream it took back (the store's TypeStreamRestored): the newest event
// of a deleted stream is its tombstone but for these.
const StreamRestoredType = "eventlite.stream.restored"

// RolledBackStream is a stream a restore takes back: Had is the newest
// version the replaced database had handed out, Have the copy's (0: the
// copy has no events of it), Exists whether the copy has its row,
// HardDeleted whether the copy holds it as hard-deleted (it gets the gap
// and no event).
type RolledBackStream struct {
	Tenant, Stream string
	Have, Had      int64
	Exists         bool
	HardDeleted    bool
}

// RestoredEvent is the event a restore appends to a stream it took back,
// prepared by the store (id, type, source, time, content type, data).
type RestoredEvent struct {
	Position         int64
	ID, Type, Source string
	Time             time.Time
	ContentType      string
	Data             []byte
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
