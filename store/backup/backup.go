package backup

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/eventlite/eventlite/internal/inside"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/internal/driver"
	"github.com/eventlite/eventlite/store/internal/sqlitedriver"
)

// files runs the operations on a database file rather than on an open
// store (Create, Restore, Inspect, the checks of a copy): the SQLite
// driver's, the one engine with files (driver.Files). Each refuses a
// PostgreSQL address first (fileOnly).
var files interface {
	driver.Executor
	driver.Files
} = sqlitedriver.Exec{}

// st is what this package needs of package store without a Store: its
// view of an engine's errors, its tables and its invariants.
var st = store.Inner(inside.Key{}, nil)

// mapErr maps an engine's error as the store's calls do (ErrBusy).
func mapErr(err error) error { return st.FileErr(err) }

// classify tells an engine's error apart.
func classify(err error) driver.Class { return st.FileClass(err) }

// Options configures Create. nil means the defaults.
type Options struct {
	// Force replaces a file at the destination. Default false: an
	// existing destination is refused with ErrDestExists.
	Force bool
	// Progress, when set, is called from the backup's goroutine after
	// every step of the copy and when the verification starts.
	Progress func(Progress)
	// PagesPerStep is how many database pages each step of the copy
	// takes (a page is 4 KiB unless the file says otherwise). Default
	// 1024.
	PagesPerStep int
	// BusyTimeout is how long to wait for a lock another process holds.
	// Default 5s.
	BusyTimeout time.Duration
}

// Backup and restore phases, as Progress.Phase reports them.
const (
	PhaseCheck   = "check"   // checking the source (Restore)
	PhaseCopy    = "copy"    // copying pages into a temporary file
	PhaseVerify  = "verify"  // checking the copy
	PhaseRestore = "restore" // copying pages into the target (Restore)
)

// Progress is how far a backup or restore got. Pages are the
// source's pages; their size is PageSize bytes.
type Progress struct {
	Phase      string
	Pages      int64 // pages copied so far in this phase
	TotalPages int64
	PageSize   int64
}

// Result describes a verified backup (or, for Restore, the restored
// database).
type Result struct {
	Path          string // the absolute path of the backup (or target)
	Events        int64
	Streams       int64
	HeadPosition  int64 // the highest position in the file; 0 without events
	Sequence      int64 // the position sequence: the next append gets Sequence+1
	SchemaVersion int
	Bytes         int64 // the file's size
	Elapsed       time.Duration
}

func (o *Options) withDefaults() Options {
	var c Options
	if o != nil {
		c = *o
	}
	c.PagesPerStep, c.BusyTimeout = stepDefaults(c.PagesPerStep, c.BusyTimeout)
	return c
}

func stepDefaults(pages int, busy time.Duration) (int, time.Duration) {
	if pages <= 0 {
		pages = 1024
	}
	if busy <= 0 {
		busy = 5 * time.Second
	}
	return pages, busy
}

// Create writes a consistent copy of the eventlite database at src to
// dest, while other connections and processes go on appending to src.
//
// It copies pages with SQLite's online backup API inside one read
// transaction on src, so the copy is the database as it was at one commit:
// it holds every append acknowledged before Create was called and no part
// of a transaction. Writers are never blocked; the -wal file of src cannot
// be checkpointed past that snapshot until the copy ends. The copy goes to
// a temporary file beside dest (".NAME.eventlite-backup-*.tmp"), is
// switched to rollback-journal mode (one self-contained file), verified —
// integrity_check, the store's invariants (see store.Store.CheckInvariants), and the
// snapshot's head position, event count and position sequence — and only
// then renamed to dest. A backup that fails or is killed leaves no file at
// dest (a killed one may leave its temporary file: delete it).
//
// A service backs up the store it has open with Create(ctx, s.Path(),
// dest, opts): the copy is made on connections of its own, beside the
// store's.
//
// src is opened without migrating or otherwise changing it. A missing src
// is store.ErrNotFound; one that is not an eventlite database store.ErrNotEventlite;
// one of a newer schema store.ErrSchemaTooNew. An existing dest is
// ErrDestExists unless opts.Force; dest must not be src, and a dest with
// a -wal file beside it (a database in use) is refused even with Force.
// A PostgreSQL address for either is *FileOnlyError (ErrFileOnly).
func Create(ctx context.Context, src, dest string, opts *Options) (res Result, err error) {
	if err := fileOnly("backup", src, dest); err != nil {
		return res, err
	}
	o := opts.withDefaults()
	start := time.Now()
	srcAbs, destAbs, err := absPaths(src, dest)
	if err != nil {
		return res, err
	}
	if err := checkDest(srcAbs, destAbs, o.Force); err != nil {
		return res, err
	}
	db, conn, err := openSource(ctx, srcAbs, o.BusyTimeout)
	if err != nil {
		return res, err
	}
	defer db.Close()
	defer conn.Close()
	endRead, err := files.BeginFileRead(ctx, conn)
	if err != nil {
		return res, fmt.Errorf("backup %s: %w", srcAbs, mapErr(err))
	}
	defer endRead()
	// The first read fixes the snapshot that the copy will hold.
	snap, err := readSchema(ctx, conn, srcAbs)
	if err != nil {
		return res, err
	}
	if snap.version == 0 {
		return res, &store.NotEventliteError{Path: srcAbs, Reason: "has no eventlite schema (an empty file): nothing to back up"}
	}
	if err := readFacts(ctx, conn, &snap); err != nil {
		return res, fmt.Errorf("backup %s: %w", srcAbs, err)
	}
	tmp, err := tempBeside(destAbs, "backup")
	if err != nil {
		return res, err
	}
	defer func() {
		if err != nil {
			removeDB(tmp)
		}
	}()
	if err := copyPages(ctx, conn, tmp, o.PagesPerStep, PhaseCopy, o.Progress); err != nil {
		return res, fmt.Errorf("backup %s: copy: %w", srcAbs, err)
	}
	endRead()
	report(o.Progress, PhaseVerify, 0, 0, 0)
	got, err := verifyCopy(ctx, tmp, snap, true)
	if err != nil {
		return res, err
	}
	if err := os.Rename(tmp, destAbs); err != nil {
		return res, fmt.Errorf("backup: rename the verified copy to %s: %w", destAbs, err)
	}
	syncDir(filepath.Dir(destAbs))
	return got.result(destAbs, start), nil
}

// fileFacts is what a database file holds, as the checks read it.
type fileFacts struct {
	version  int   // the schema version
	objects  int   // schema objects
	ours     int   // eventlite's first tables found
	events   int64 // rows in events
	streams  int64
	head     int64 // MAX(position)
	sequence int64 // the last position handed out, at least head
	pageSize int64
}

func (f fileFacts) result(path string, start time.Time) Result {
	r := Result{Path: path, Events: f.events, Streams: f.streams, HeadPosition: f.head,
		Sequence: f.sequence, SchemaVersion: f.version, Elapsed: time.Since(start)}
	if fi, err := os.Stat(path); err == nil {
		r.Bytes = fi.Size()
	}
	return r
}

// readSchema reads the schema version and tables of the file on conn
// and refuses what is not an eventlite database of a known schema.
// version 0 means a file without tables.
func readSchema(ctx context.Context, conn *sql.Conn, path string) (fileFacts, error) {
	var f fileFacts
	var err error
	f.objects, f.ours, f.version, err = files.SchemaObjects(ctx, conn, st.FileTables())
	if err == nil {
		f.pageSize, err = files.PageSize(ctx, conn)
	}
	switch classify(err) {
	case driver.NotADatabase:
		return f, &store.NotEventliteError{Path: path, Reason: "is not a SQLite database"}
	case driver.Corrupt:
		return f, &CheckError{Path: path, Problems: []string{"SQLite reports the file corrupt: " + err.Error()}}
	}
	switch {
	case err != nil:
		return f, fmt.Errorf("read the schema of %s: %w", path, mapErr(err))
	case f.objects == 0 && f.version == 0:
		return f, nil
	case f.ours != len(st.FileTables()) || f.version == 0:
		return f, &store.NotEventliteError{Path: path, Reason: fmt.Sprintf("holds %d tables or other schema objects of its own and no eventlite schema (user_version %d)", f.objects, f.version)}
	case f.version > store.SchemaVersion():
		return f, fmt.Errorf("%w: %s has schema %d, this eventlite knows up to %d: upgrade eventlite", store.ErrSchemaTooNew, path, f.version, store.SchemaVersion())
	}
	return f, nil
}

// readFacts reads the counts, head and sequence into f. A file of an
// old schema may keep its sequence below its head: the head was handed
// out all the same.
func readFacts(ctx context.Context, q driver.ReadQuerier, f *fileFacts) error {
	lf, err := files.LogFacts(ctx, q)
	if err != nil {
		return mapErr(err)
	}
	f.events, f.streams, f.head, f.sequence = lf.Events, lf.Streams, lf.Head, max(lf.Sequence, lf.Head)
	return nil
}

// checkFile refuses a file on conn that is not an eventlite database of a
// known schema, fails integrity_check or breaks an invariant, and returns
// what it holds.
func checkFile(ctx context.Context, conn *sql.Conn, path string) (fileFacts, error) {
	f, err := readSchema(ctx, conn, path)
	if err != nil {
		return f, err
	}
	if f.version == 0 {
		return f, &store.NotEventliteError{Path: path, Reason: "has no eventlite schema (an empty file)"}
	}
	problems, err := st.FileProblems(ctx, files, conn)
	if err != nil {
		if c := classify(err); c == driver.Corrupt || c == driver.NotADatabase {
			return f, &CheckError{Path: path, Problems: []string{"SQLite reports the file corrupt: " + err.Error()}}
		}
		return f, fmt.Errorf("check %s: %w", path, err)
	}
	if len(problems) > 0 {
		return f, &CheckError{Path: path, Problems: problems}
	}
	if err := readFacts(ctx, conn, &f); err != nil {
		return f, fmt.Errorf("check %s: %w", path, err)
	}
	return f, nil
}

// verifyCopy makes the copy at path one self-contained file and checks
// that it holds what the snapshot held; full also runs the engine's
// integrity check and the invariants on it.
func verifyCopy(ctx context.Context, path string, want fileFacts, full bool) (fileFacts, error) {
	db, conn, err := files.OpenFile(ctx, path, driver.FileOptions{})
	if err != nil {
		return fileFacts{}, mapErr(err)
	}
	defer db.Close()
	defer conn.Close()
	if err := files.SealFile(ctx, conn); err != nil {
		return fileFacts{}, fmt.Errorf("verify the copy: %w", mapErr(err))
	}
	var got fileFacts
	if full {
		got, err = checkFile(ctx, conn, path)
	} else {
		if got, err = readSchema(ctx, conn, path); err == nil {
			err = readFacts(ctx, conn, &got)
		}
	}
	if err != nil {
		return got, err
	}
	var problems []string
	if got.version != want.version {
		problems = append(problems, fmt.Sprintf("schema %d, the source had %d", got.version, want.version))
	}
	if got.events != want.events || got.head != want.head || got.sequence != want.sequence || got.streams != want.streams {
		problems = append(problems, fmt.Sprintf("holds %d events in %d streams up to position %d (sequence %d); the snapshot held %d in %d up to %d (sequence %d)",
			got.events, got.streams, got.head, got.sequence, want.events, want.streams, want.head, want.sequence))
	}
	if len(problems) > 0 {
		return got, &CheckError{Path: path, Problems: problems}
	}
	if err := conn.Close(); err != nil {
		return got, err
	}
	return got, db.Close()
}

// copyPages copies the database of conn (inside its read transaction,
// which fixes the snapshot) to a new file at dst.
func copyPages(ctx context.Context, conn *sql.Conn, dst string, step int, phase string, progress func(Progress)) error {
	return mapErr(files.CopyFile(ctx, conn, dst, step, func(done, total, pageSize int64) {
		report(progress, phase, done, total, pageSize)
	}))
}

func report(progress func(Progress), phase string, done, total, pageSize int64) {
	if progress != nil {
		progress(Progress{Phase: phase, Pages: done, TotalPages: total, PageSize: pageSize})
	}
}

// openSource opens the database at path for reading only, on one
// connection, without creating or changing it. A missing file is
// store.ErrNotFound.
func openSource(ctx context.Context, path string, busy time.Duration) (*sql.DB, *sql.Conn, error) {
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return nil, nil, fmt.Errorf("%s: %w", path, store.ErrNotFound)
	}
	db, conn, err := files.OpenFile(ctx, path, driver.FileOptions{ReadOnly: true, BusyTimeout: busy})
	if err != nil {
		if classify(err) == driver.NotADatabase {
			return nil, nil, &store.NotEventliteError{Path: path, Reason: "is not a SQLite database"}
		}
		return nil, nil, fmt.Errorf("open %s: %w", path, mapErr(err))
	}
	return db, conn, nil
}

// checkDest refuses a backup destination that is the source, a
// directory, a database in use, or (without force) any existing file.
func checkDest(src, dest string, force bool) error {
	if src == dest || sameFile(src, dest) {
		return fmt.Errorf("%w: %s is the database being backed up: choose another path", ErrDestExists, dest)
	}
	fi, err := os.Stat(dest)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return fmt.Errorf("backup: %w", err)
	case fi.IsDir():
		return fmt.Errorf("%w: %s is a directory: name the backup file", ErrDestExists, dest)
	case !force:
		return fmt.Errorf("%w: %s: pass --force (Options.Force) to replace it, or choose another path", ErrDestExists, dest)
	}
	if _, err := os.Stat(dest + "-wal"); err == nil {
		return fmt.Errorf("%w: %s has a -wal file beside it, so a database may be in use there; a backup never replaces it: choose another path (to replace a live database, use eventlite restore)", ErrDestExists, dest)
	}
	if _, err := os.Stat(filepath.Dir(dest)); err != nil {
		return fmt.Errorf("backup: the directory of %s: %w", dest, err)
	}
	return nil
}

// tempBeside creates an empty temporary file in path's directory, where
// a rename to path is atomic. SQLite opens it as an empty database.
func tempBeside(path, what string) (string, error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".eventlite-"+what+"-*.tmp")
	if err != nil {
		return "", fmt.Errorf("%s: create a temporary file beside %s: %w", what, path, err)
	}
	name := f.Name()
	if err := f.Close(); err != nil {
		_ = os.Remove(name)
		return "", err
	}
	return name, nil
}

// removeDB removes a database file this package created, with the
// journal files SQLite may have left beside it.
func removeDB(path string) {
	for _, suffix := range []string{"", "-journal", "-wal", "-shm"} {
		_ = os.Remove(path + suffix)
	}
}

// syncDir makes a rename in dir durable (best effort: not every
// platform can sync a directory).
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
}

func absPaths(a, b string) (string, string, error) {
	if a == "" || b == "" {
		return "", "", errors.New("store: empty database path")
	}
	aa, err := filepath.Abs(a)
	if err != nil {
		return "", "", err
	}
	bb, err := filepath.Abs(b)
	return aa, bb, err
}

// sameFile reports whether a and b name one existing file. It only
// stats them (opening a database file and closing it would drop SQLite's
// locks in this process).
func sameFile(a, b string) bool {
	fa, err1 := os.Stat(a)
	fb, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(fa, fb)
}
