package store

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"github.com/eventlite/eventlite/store/internal/driver"
)

// RestoreOptions configures Restore. nil means the defaults.
type RestoreOptions struct {
	// Force replaces a target that has events. Default false: such a
	// target is refused with ErrTargetNotEmpty and left unchanged.
	Force bool
	// Progress, when set, is called after every step of the two copies
	// (the source to a temporary file beside the target, then that file
	// into the target) and when a check starts.
	Progress func(BackupProgress)
	// PagesPerStep: as BackupOptions'. Default 1024.
	PagesPerStep int
	// BusyTimeout is how long the restore waits for the target's write
	// lock before it gives up with ErrBusy. Default 5s.
	BusyTimeout time.Duration
	// MinSequence raises the restored position sequence to at least this
	// value (the next append gets a position above it), besides the old
	// target's: for a target that is lost, set it to the highest position
	// consumers have seen. Default 0.
	MinSequence int64
}

// RestoreResult describes what Restore did.
type RestoreResult struct {
	BackupResult
	Source string // the absolute path of the file restored from
	// Previous describes the target as it was (zero values when it did
	// not exist or had no eventlite schema).
	PreviousEvents   int64
	PreviousSequence int64
}

func (o *RestoreOptions) withDefaults() RestoreOptions {
	var c RestoreOptions
	if o != nil {
		c = *o
	}
	c.PagesPerStep, c.BusyTimeout = stepDefaults(c.PagesPerStep, c.BusyTimeout)
	return c
}

// Restore replaces the database at target with the eventlite database at
// src, through SQLite's backup API: every process that has target open
// sees the restored content at its next transaction (target is never
// renamed over, so no process is left holding a replaced file).
//
// It first checks src (read without changing it): an eventlite database
// of a schema this binary knows (an older one is restored as it is, and
// migrated by the next Open that writes), integrity_check ok, the store's
// invariants holding. A src that fails is refused — ErrNotEventlite,
// ErrSchemaTooNew or ErrBackupInvalid — before target is touched. The
// checked snapshot is copied to a temporary file beside target. Then
// Restore takes target's write lock and holds it to the end (ErrBusy when
// another process holds it past opts.BusyTimeout; target unchanged), reads
// what target holds under the lock, refuses a target with events unless
// opts.Force (ErrTargetNotEmpty; unchanged), raises the copy's position
// sequence to at least target's, so that no position target handed out is
// ever handed out again, and copies the pages in, committing once. A
// target that does not exist is created. A PostgreSQL address for either
// is *FileOnlyError (ErrFileOnly).
func Restore(ctx context.Context, src, target string, opts *RestoreOptions) (res RestoreResult, err error) {
	if err := fileOnly("restore", src, target); err != nil {
		return res, err
	}
	o := opts.withDefaults()
	start := time.Now()
	srcAbs, targetAbs, err := absPaths(src, target)
	if err != nil {
		return res, err
	}
	if srcAbs == targetAbs || sameFile(srcAbs, targetAbs) {
		return res, &BackupCheckError{Path: srcAbs, Problems: []string{"it is the restore's target itself: name another file to restore from"}}
	}
	if fi, err := os.Stat(targetAbs); err == nil && fi.IsDir() {
		return res, fmt.Errorf("restore: target %s is a directory: name the database file", targetAbs)
	}
	snap, tmp, err := copySource(ctx, srcAbs, targetAbs, o)
	if err != nil {
		return res, err
	}
	defer removeDB(tmp)
	res.Source = srcAbs
	prev, err := restoreInto(ctx, tmp, targetAbs, snap, o)
	if err != nil {
		return res, err
	}
	res.PreviousEvents, res.PreviousSequence = prev.events, prev.sequence
	report(o.Progress, PhaseVerify, 0, 0, 0)
	got, err := verifyRestored(ctx, targetAbs, snap, prev, o)
	if err != nil {
		return res, err
	}
	res.BackupResult = got.result(targetAbs, start)
	return res, nil
}

// copySource checks src inside one read transaction and copies that
// snapshot to a temporary file beside target, verified, in
// rollback-journal mode. The caller removes the file.
func copySource(ctx context.Context, src, target string, o RestoreOptions) (fileFacts, string, error) {
	db, conn, err := openSource(ctx, src, o.BusyTimeout)
	if err != nil {
		return fileFacts{}, "", err
	}
	defer db.Close()
	defer conn.Close()
	endRead, err := fileExec.BeginFileRead(ctx, conn)
	if err != nil {
		return fileFacts{}, "", fmt.Errorf("restore from %s: %w", src, mapErr(err))
	}
	defer endRead()
	report(o.Progress, PhaseCheck, 0, 0, 0)
	snap, err := checkFile(ctx, conn, src)
	if err != nil {
		return fileFacts{}, "", err
	}
	tmp, err := tempBeside(target, "restore")
	if err != nil {
		return fileFacts{}, "", err
	}
	if err := copyPages(ctx, conn, tmp, o.PagesPerStep, PhaseCopy, o.Progress); err != nil {
		removeDB(tmp)
		return fileFacts{}, "", fmt.Errorf("restore from %s: copy: %w", src, err)
	}
	endRead()
	// The copy is the checked snapshot page for page: compare what it
	// holds with the snapshot rather than checking it all again.
	if _, err := verifyCopy(ctx, tmp, snap, false); err != nil {
		removeDB(tmp)
		return fileFacts{}, "", err
	}
	return snap, tmp, nil
}

// restoreInto copies the database file tmp into target in place,
// holding target's write lock from before it reads target's state until
// the copy commits. It returns what target held before.
func restoreInto(ctx context.Context, tmp, target string, snap fileFacts, o RestoreOptions) (prev fileFacts, err error) {
	_, statErr := os.Stat(target)
	created := errors.Is(statErr, fs.ErrNotExist)
	// Read what target holds before the lock too: the engine may not let
	// another connection read target while the restore holds its lock
	// (when it does, target is read again under the lock below).
	if !created {
		if prev, err = readTarget(ctx, target, o.BusyTimeout); err != nil {
			return prev, err
		}
	}
	db, conn, err := fileExec.OpenFile(ctx, target, driver.FileOptions{BusyTimeout: o.BusyTimeout, Durable: true})
	if err != nil {
		if created {
			removeDB(target)
		}
		return prev, fmt.Errorf("restore into %s: %w", target, mapErr(err))
	}
	defer db.Close()
	defer func() {
		if err != nil && created {
			_ = conn.Close()
			_ = db.Close()
			removeDB(target)
		}
	}()
	defer conn.Close()
	var lockedErr error
	underLock := func(readable bool) error {
		if readable {
			if prev, lockedErr = readTarget(ctx, target, o.BusyTimeout); lockedErr != nil {
				return lockedErr
			}
		}
		if prev.events > 0 && !o.Force {
			lockedErr = &TargetNotEmptyError{Path: target, Events: prev.events, HeadPosition: prev.head}
			return lockedErr
		}
		if floor := max(prev.sequence, prev.head, o.MinSequence); floor > snap.sequence {
			// Nothing is copied yet: the copy takes this change of its
			// source along.
			lockedErr = raiseSequence(ctx, tmp, snap.head, floor)
		}
		return lockedErr
	}
	err = fileExec.CopyInto(ctx, conn, tmp, snap.pageSize, o.PagesPerStep, underLock, func(done, total, pageSize int64) {
		report(o.Progress, PhaseRestore, done, total, pageSize)
	})
	var locked *driver.LockedError
	var pages *driver.PageSizeError
	switch {
	case err == nil:
	case err == lockedErr, err == ctx.Err():
	case errors.As(err, &pages):
		err = fmt.Errorf("restore into %s: its pages are %d bytes and the backup's %d, which a restore in place cannot change; it was left unchanged: "+
			"restore into a new file (--db NEW), then move that into place while no process has the database open", target, pages.Target, pages.Source)
	case errors.As(err, &locked):
		err = fmt.Errorf("%w: restore into %s: another process holds its write lock (%v); it was left unchanged: stop the process that writes to it, or retry",
			ErrBusy, target, locked.Err)
	default:
		err = fmt.Errorf("restore into %s: %w", target, mapErr(err))
	}
	return prev, err
}

// raiseSequence raises the position sequence in the database file path
// to floor, so that no position up to floor is handed out again, and
// records the positions above head up to floor as a hole left by a
// restore (in a file that records holes), so that readers pass it and
// doctor knows it.
func raiseSequence(ctx context.Context, path string, head, floor int64) error {
	db, conn, err := fileExec.OpenFile(ctx, path, driver.FileOptions{})
	if err != nil {
		return err
	}
	defer db.Close()
	defer conn.Close()
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	if err := fileExec.RaiseSequence(ctx, tx, floor); err != nil {
		return fmt.Errorf("restore: keep the position sequence at %d: %w", floor, err)
	}
	if err := fileExec.RecordRestoreHole(ctx, tx, head+1, floor, HoleRestore, time.Now().UnixNano()); err != nil {
		return fmt.Errorf("restore: record the positions %d-%d as a restore's hole: %w", head+1, floor, err)
	}
	return tx.Commit()
}

// verifyRestored reads the restored target back: it holds the snapshot's
// events, and its sequence is at least the old target's.
func verifyRestored(ctx context.Context, target string, snap, prev fileFacts, o RestoreOptions) (fileFacts, error) {
	got, err := readTarget(ctx, target, o.BusyTimeout)
	if err != nil {
		return got, err
	}
	want := snap
	want.sequence = max(snap.sequence, prev.sequence, prev.head, o.MinSequence)
	if got.version != want.version || got.events != want.events || got.head != want.head || got.sequence < want.sequence {
		return got, &BackupCheckError{Path: target, Problems: []string{fmt.Sprintf(
			"after the restore it holds %d events up to position %d (sequence %d, schema %d); want %d up to %d (sequence at least %d, schema %d)",
			got.events, got.head, got.sequence, got.version, want.events, want.head, want.sequence, want.version)}}
	}
	return got, nil
}

// readTarget reads what the database at path holds, on a connection of
// its own. A file that is not eventlite's is refused (ErrNotEventlite);
// one of a newer schema counts as holding events, so that only Force
// replaces it.
func readTarget(ctx context.Context, path string, busy time.Duration) (fileFacts, error) {
	db, conn, err := openSource(ctx, path, busy)
	if err != nil {
		return fileFacts{}, err
	}
	defer db.Close()
	defer conn.Close()
	f, err := readSchema(ctx, conn, path)
	switch {
	case errors.Is(err, ErrNotEventlite):
		// Another program's database is never replaced, not even with
		// Force: remove it first if it really is to go.
		return f, fmt.Errorf("restore: %w", err)
	case errors.Is(err, ErrSchemaTooNew):
		// Newer: replaced only with Force, as if it had events.
		f.events = max(int64(f.objects), 1)
		return f, nil
	case err != nil:
		return f, fmt.Errorf("restore: read the target: %w", err)
	case f.version == 0:
		return f, nil
	}
	if err := readFacts(ctx, conn, &f); err != nil {
		return f, fmt.Errorf("restore: read the target %s: %w", path, err)
	}
	return f, nil
}

// HoleRestore is the DetectedBy of the hole a restore leaves: the
// positions that the replaced database had handed out above the backup's
// head. CheckInvariants and Diagnose know them as no damage.
const HoleRestore = "restore"

// restoreGaps returns the holes restores recorded.
func (s *Store) restoreGaps(ctx context.Context) ([]Hole, error) {
	holes, err := s.ex.HolesDetectedBy(ctx, s.rdb, HoleRestore)
	if err != nil {
		return nil, mapErr(err)
	}
	var out []Hole
	for _, h := range holes {
		out = append(out, Hole{From: h.From, To: h.To})
	}
	return out, nil
}

// coveredBy reports whether h lies inside one of gaps.
func coveredBy(h Hole, gaps []Hole) bool {
	for _, g := range gaps {
		if h.From >= g.From && h.To <= g.To {
			return true
		}
	}
	return false
}
