package backup

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"time"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/store"
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
	Progress func(Progress)
	// PagesPerStep: as Options'. Default 1024.
	PagesPerStep int
	// BusyTimeout is how long the restore waits for the target's write
	// lock before it gives up with store.ErrBusy. Default 5s.
	BusyTimeout time.Duration
	// MinSequence raises the restored position sequence to at least this
	// value (the next append gets a position above it), besides the old
	// target's: for a target that is lost, set it to the highest position
	// consumers have seen. Default 0; at most envelope.MaxPosition (past
	// it, or negative: *store.PositionRangeError, nothing changed).
	MinSequence int64
	// ReapplyForgets forgets again, in the restored database, every
	// subject the database replaced had forgotten and the backup has not
	// (a backup taken before the forget still holds the subject's key):
	// the key destroyed or the tombstone kept as the database had it,
	// the subject's snapshots dropped, the copies of its events and its
	// outbox error texts cleared, its ciphertext removed. Default false:
	// such a restore is refused with an *UnforgetError (ErrUnforget)
	// and the database left unchanged.
	ReapplyForgets bool
}

// RestoreResult describes what Restore did.
type RestoreResult struct {
	Result
	Source string // the absolute path of the file restored from
	// Previous describes the target as it was (zero values when it did
	// not exist or had no eventlite schema).
	PreviousEvents   int64
	PreviousSequence int64
	// RolledBack lists, in (tenant, stream) order, the streams whose
	// versions the restore took back: the target had handed out
	// versions above the backup's. Each got an eventlite.stream.restored
	// event (store.TypeStreamRestored) above every version it had, so that no
	// version is handed out twice (a stream the backup holds
	// hard-deleted gets the recorded gap alone). Empty when the target had no events,
	// or the backup's schema records no version gaps (older than this
	// binary's): see docs/backup.md.
	RolledBack []RolledBackStream
	// Reforgotten lists, in (tenant, subject) order, the subjects the
	// restore forgot again (RestoreOptions.ReapplyForgets).
	Reforgotten []ForgottenSubject
}

// RolledBackStream is a stream a restore took back: the backup had its
// versions up to Kept (0: none of its events), the replaced database up
// to Had (the highest version it had handed out, by an event or an
// earlier restore's gap). Versions Kept+1..Had are a recorded gap, and
// the eventlite.stream.restored event is version Had+1, but for a stream
// the backup holds hard-deleted (HardDeleted): it is never written nor
// read again, its tombstone stays its newest event, and the gap alone
// keeps those versions from being handed out again should a later
// restore bring back a backup in which the stream lives.
type RolledBackStream struct {
	Tenant, Stream string
	Kept, Had      int64
	HardDeleted    bool
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
// Restore decides before it commits. It first checks src (read without
// changing it): an eventlite database of a schema this binary knows (an
// older one is restored as it is, and migrated by the next store.Open that
// writes), integrity_check ok, the store's invariants holding. A src that
// fails is refused — store.ErrNotEventlite, store.ErrSchemaTooNew or ErrInvalid
// — before target is touched. The checked snapshot is copied to a
// temporary file beside target. Then Restore puts target in WAL mode (so
// that it can be read while the restore holds its lock), takes target's
// write lock and holds it until the copy commits (store.ErrBusy when another
// process holds it past opts.BusyTimeout; target unchanged), reads what
// target holds under the lock, refuses another program's database
// (store.ErrNotEventlite) and a target with events unless opts.Force
// (ErrTargetNotEmpty; unchanged), raises the copy's position sequence to
// at least target's and opts.MinSequence (a MinSequence past
// MaxPosition is *RangeError before anything is read), so that no
// position target handed out is ever handed out again, and copies the
// pages in, committing once. A target that does not exist is created.
//
// After the commit it checks only what writers cannot change, since
// they may append at once: the snapshot's events are there up to its
// head, the position sequence is at least the floor, and the positions
// between are recorded as the restore's hole. A failure there is
// *RestoreUnverifiedError (ErrRestoreUnverified): the database was
// replaced. A PostgreSQL address for either is *FileOnlyError
// (ErrFileOnly).
func Restore(ctx context.Context, src, target string, opts *RestoreOptions) (res RestoreResult, err error) {
	if err := fileOnly("restore", src, target); err != nil {
		return res, err
	}
	o := opts.withDefaults()
	if o.MinSequence < 0 || o.MinSequence > envelope.MaxPosition {
		return res, &store.PositionRangeError{Field: "RestoreOptions.MinSequence (--min-sequence)", Value: o.MinSequence, Max: envelope.MaxPosition}
	}
	start := time.Now()
	srcAbs, targetAbs, err := absPaths(src, target)
	if err != nil {
		return res, err
	}
	if srcAbs == targetAbs || sameFile(srcAbs, targetAbs) {
		return res, &CheckError{Path: srcAbs, Problems: []string{"it is the restore's target itself: name another file to restore from"}}
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
	release, err := takeLeases(ctx, targetAbs, o)
	if err != nil {
		return res, err
	}
	prev, floor, rolledBack, reforgot, err := restoreInto(ctx, tmp, targetAbs, srcAbs, snap, o)
	if err != nil {
		release()
		return res, err
	}
	res.Reforgotten = reforgot
	// The database is replaced: whatever fails from here on says so.
	res.PreviousEvents, res.PreviousSequence = prev.events, prev.sequence
	res.RolledBack = rolledBack
	if restoreHooks.afterCommit != nil {
		restoreHooks.afterCommit(targetAbs)
	}
	report(o.Progress, PhaseVerify, 0, 0, 0)
	if err := verifyRestored(ctx, targetAbs, snap, floor, rolledBack, o); err != nil {
		return res, err
	}
	if err := announceRestoredForgets(ctx, targetAbs, res.Reforgotten, o); err != nil {
		return res, &RestoreUnverifiedError{Path: targetAbs, Err: fmt.Errorf("the subjects were forgotten again, but announcing it: %w", err)}
	}
	snap.sequence = floor
	res.Result = snap.result(targetAbs, start)
	return res, nil
}

// restoreHooks are called at the points of a restore that a test makes
// a race at: beforeLock before the restore opens the target,
// afterCommit between the copy's commit and the check after it.
var restoreHooks struct {
	beforeLock, afterCommit, leasesTaken func(target string)
}

// restoreLeaseOwner is the owner of the leases a restore takes.
const restoreLeaseOwner = "eventlite-restore"

// takeLeases takes, before a restore with Force copies anything, every
// lease a holder has in target (the relay's, projection runners'), so
// that their renewals fail, and waits until the latest of them was to
// expire: a holder renews before its lease expires, so by then each
// live holder has found its lease taken and stopped (the relay cancels
// the sends it has not started). The restore's commit replaces the
// leases with the copy's, fenced (markCopy); release frees them when the
// restore fails before its commit. A restore without Force takes none:
// a target with events is refused, and must stay unchanged.
func takeLeases(ctx context.Context, target string, o RestoreOptions) (release func(), err error) {
	release = func() {}
	if !o.Force {
		return release, nil
	}
	if _, err := os.Stat(target); err != nil {
		return release, nil
	}
	db, conn, err := files.OpenFile(ctx, target, driver.FileOptions{BusyTimeout: o.BusyTimeout})
	if err != nil {
		return release, nil // restoreInto says what is wrong with target
	}
	defer db.Close()
	defer conn.Close()
	heldUntil, now, err := files.TakeLeases(ctx, conn, restoreLeaseOwner, (restoreLeaseWait + o.BusyTimeout).Milliseconds())
	switch {
	case classify(err) == driver.Busy:
		return release, fmt.Errorf("%w: restore into %s: another process holds its write lock; it was left unchanged: stop the process that writes to it, or retry", store.ErrBusy, target)
	case err != nil || heldUntil == 0:
		// Not a database, or none of eventlite's: restoreInto decides.
		return release, nil
	}
	release = func() {
		db, conn, err := files.OpenFile(context.Background(), target, driver.FileOptions{BusyTimeout: o.BusyTimeout})
		if err != nil {
			return
		}
		defer db.Close()
		defer conn.Close()
		_ = files.ReleaseLeases(context.Background(), conn, restoreLeaseOwner)
	}
	if restoreHooks.leasesTaken != nil {
		restoreHooks.leasesTaken(target)
	}
	wait := time.Duration(heldUntil-now) * time.Millisecond
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-ctx.Done():
		release()
		return func() {}, ctx.Err()
	case <-t.C:
	}
	return release, nil
}

// restoreLeaseWait is how long the leases a restore takes last beyond
// its busy timeout, should the restore die before its commit replaces
// them: the holders stand by until then.
const restoreLeaseWait = time.Minute

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
	endRead, err := files.BeginFileRead(ctx, conn)
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
// the copy commits. It returns what target held before and the position
// floor the copy took.
func restoreInto(ctx context.Context, tmp, target, src string, snap fileFacts, o RestoreOptions) (prev fileFacts, floor int64, rolledBack []RolledBackStream, reforgot []ForgottenSubject, err error) {
	if restoreHooks.beforeLock != nil {
		restoreHooks.beforeLock(target)
	}
	_, statErr := os.Stat(target)
	created := errors.Is(statErr, fs.ErrNotExist)
	db, conn, err := files.OpenFile(ctx, target, driver.FileOptions{BusyTimeout: o.BusyTimeout, Durable: true})
	if err != nil {
		if created {
			removeDB(target)
		}
		if classify(err) == driver.NotADatabase {
			return prev, 0, nil, nil, fmt.Errorf("restore: %w", &store.NotEventliteError{Path: target, Reason: "is not a SQLite database"})
		}
		return prev, 0, nil, nil, fmt.Errorf("restore into %s: %w", target, mapErr(err))
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
	// Under the lock no writer commits: what target holds now is what
	// the restore replaces, and every refusal is decided here.
	underLock := func() error {
		if prev, lockedErr = readTarget(ctx, target, o.BusyTimeout); lockedErr != nil {
			return lockedErr
		}
		if prev.events > 0 && !o.Force {
			lockedErr = &TargetNotEmptyError{Path: target, Events: prev.events, HeadPosition: prev.head}
			return lockedErr
		}
		// A forget committed in target after the backup was taken must
		// not be undone by it: refused, or applied to the copy.
		var forgotten []driver.ForgottenKey
		if prev.version > 0 {
			if forgotten, lockedErr = forgottenInFile(ctx, target, o); lockedErr != nil {
				return lockedErr
			}
		}
		if reforgot, lockedErr = reforgetCopy(ctx, tmp, src, forgotten, o); lockedErr != nil {
			return lockedErr
		}
		floor = max(snap.sequence, prev.sequence, prev.head, o.MinSequence)
		// Nothing is copied yet: the copy takes this change of its
		// source along.
		rolledBack, lockedErr = markCopy(ctx, tmp, target, snap, floor)
		return lockedErr
	}
	err = files.CopyInto(ctx, conn, tmp, snap.pageSize, o.PagesPerStep, underLock, func(done, total, pageSize int64) {
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
			store.ErrBusy, target, locked.Err)
	default:
		err = fmt.Errorf("restore into %s: %w", target, mapErr(err))
	}
	if err != nil {
		rolledBack, reforgot = nil, nil
	}
	return prev, floor, rolledBack, reforgot, err
}

// markCopy prepares the copy at path, under the target's lock, so that
// nothing the target handed out is handed out again: it raises the
// position sequence to floor and records the positions above the
// snapshot's head up to floor as a hole left by a restore (in a file
// that records holes), so that readers pass it and doctor knows it; and
// for every stream whose newest version in target is above the copy's,
// it records the versions between as a restore's gap and appends an
// eventlite.stream.restored event above them, at the positions after
// floor.
func markCopy(ctx context.Context, path, target string, snap fileFacts, floor int64) ([]RolledBackStream, error) {
	db, conn, err := files.OpenFile(ctx, path, driver.FileOptions{})
	if err != nil {
		return nil, err
	}
	defer db.Close()
	defer conn.Close()
	if err := files.FenceLeases(ctx, conn, target); err != nil {
		return nil, fmt.Errorf("restore: fence the leases: %w", mapErr(err))
	}
	if err := files.RaiseStatsGeneration(ctx, conn, target); err != nil {
		return nil, fmt.Errorf("restore: move the stats generation past the target's: %w", mapErr(err))
	}
	rolled, err := files.RolledBackStreams(ctx, conn, target)
	if err != nil {
		return nil, fmt.Errorf("restore: compare the streams' versions with the target's: %w", mapErr(err))
	}
	if floor == snap.sequence && len(rolled) == 0 {
		return nil, nil
	}
	events := 0 // one restored event per stream the copy does not hold hard-deleted
	for _, r := range rolled {
		if !r.HardDeleted {
			events++
		}
	}
	if floor > envelope.MaxPosition-int64(events) {
		return nil, &store.PositionRangeError{Field: "the restore's stream events (one per stream it takes back, above the position floor)", Value: floor, Max: envelope.MaxPosition - int64(events)}
	}
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	defer func() { _ = tx.Rollback() }()
	now := time.Now()
	if floor > snap.sequence {
		if err := files.RaiseSequence(ctx, tx, floor); err != nil {
			return nil, fmt.Errorf("restore: keep the position sequence at %d: %w", floor, err)
		}
		if err := files.RecordRestoreHole(ctx, tx, snap.head+1, floor, store.HoleRestore, now.UnixNano()); err != nil {
			return nil, fmt.Errorf("restore: record the positions %d-%d as a restore's hole: %w", snap.head+1, floor, err)
		}
	}
	out := make([]RolledBackStream, 0, len(rolled))
	next := floor + 1
	for _, r := range rolled {
		var row driver.RestoredEvent
		// A stream the copy holds hard-deleted is never written nor read
		// again: its gap alone keeps the versions the target handed out,
		// for a later restore of an older file in which it lives.
		if !r.HardDeleted {
			ev, err := envelope.New(store.TypeStreamRestored, store.StreamRestored{From: r.Have + 1, To: r.Had})
			if err != nil {
				return nil, err
			}
			ev.Source = "eventlite"
			if err := ev.Prepare(now, 0); err != nil {
				return nil, err
			}
			row = driver.RestoredEvent{Position: next, ID: ev.ID, Type: ev.Type, Source: ev.Source,
				Time: ev.Time, ContentType: ev.DataContentType, Data: ev.Data}
			next++
		}
		if err := files.RecordVersionGap(ctx, tx, r, row, store.HoleRestore, now.UnixNano()); err != nil {
			return nil, fmt.Errorf("restore: record the versions %d-%d of stream %q (tenant %q) as a restore's gap: %w", r.Have+1, r.Had, r.Stream, r.Tenant, mapErr(err))
		}
		out = append(out, RolledBackStream{Tenant: r.Tenant, Stream: r.Stream, Kept: r.Have, Had: r.Had, HardDeleted: r.HardDeleted})
	}
	if err := tx.Commit(); err != nil {
		return nil, err
	}
	return out, nil
}

// verifyRestored reads the restored target back, in one snapshot, after
// the copy committed, and checks only what writers cannot change: the
// schema is at least the snapshot's, the snapshot's events are there up
// to its head, the position sequence is at least floor, the positions
// between the head and floor are a recorded restore hole, and the
// streams taken back have their version gaps recorded.
// Writers may have appended meanwhile: their events are above floor. Any
// failure is *RestoreUnverifiedError.
func verifyRestored(ctx context.Context, target string, snap fileFacts, floor int64, rolledBack []RolledBackStream, o RestoreOptions) error {
	unverified := func(err error) error { return &RestoreUnverifiedError{Path: target, Err: err} }
	db, conn, err := openSource(ctx, target, o.BusyTimeout)
	if err != nil {
		return unverified(err)
	}
	defer db.Close()
	defer conn.Close()
	endRead, err := files.BeginFileRead(ctx, conn)
	if err != nil {
		return unverified(mapErr(err))
	}
	defer endRead()
	got, err := readSchema(ctx, conn, target)
	if err != nil {
		return unverified(err)
	}
	var problems []string
	if got.version < snap.version {
		problems = append(problems, fmt.Sprintf("schema %d, the backup's is %d", got.version, snap.version))
	}
	if got.version == 0 {
		return &RestoreUnverifiedError{Path: target, Problems: append(problems, "it has no eventlite schema")}
	}
	if err := readFacts(ctx, conn, &got); err != nil {
		return unverified(err)
	}
	events, head, err := files.EventsUpTo(ctx, conn, snap.head)
	if err != nil {
		return unverified(mapErr(err))
	}
	if events != snap.events || head != snap.head {
		problems = append(problems, fmt.Sprintf("it holds %d events up to position %d; the backup held %d up to %d", events, head, snap.events, snap.head))
	}
	if got.sequence < floor {
		problems = append(problems, fmt.Sprintf("its position sequence is %d, below the floor %d the restore set", got.sequence, floor))
	}
	recordsHoles, err := files.TableExists(ctx, conn, "position_holes")
	if err != nil {
		return unverified(mapErr(err))
	}
	if floor > snap.sequence && recordsHoles {
		holes, err := files.HolesDetectedBy(ctx, conn, store.HoleRestore)
		if err != nil {
			return unverified(mapErr(err))
		}
		if !slices.ContainsFunc(holes, func(h driver.FileHole) bool { return h.From <= snap.head+1 && h.To >= floor }) {
			problems = append(problems, fmt.Sprintf("the positions %d-%d are not recorded as the restore's hole", snap.head+1, floor))
		}
	}
	if len(rolledBack) > 0 {
		gaps, err := files.VersionGapsDetectedBy(ctx, conn, store.HoleRestore)
		if err != nil {
			return unverified(mapErr(err))
		}
		for _, r := range rolledBack {
			if !slices.ContainsFunc(gaps, func(g driver.RolledBackStream) bool {
				return g.Tenant == r.Tenant && g.Stream == r.Stream && g.Have == r.Kept && g.Had == r.Had
			}) {
				problems = append(problems, fmt.Sprintf("the versions %d-%d of stream %q (tenant %q) are not recorded as the restore's gap", r.Kept+1, r.Had, r.Stream, r.Tenant))
			}
		}
	}
	if len(problems) > 0 {
		return &RestoreUnverifiedError{Path: target, Problems: problems}
	}
	return nil
}

// readTarget reads what the database at path holds, on a connection of
// its own. A file that is not eventlite's is refused (store.ErrNotEventlite);
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
	case errors.Is(err, store.ErrNotEventlite):
		// Another program's database is never replaced, not even with
		// Force: remove it first if it really is to go.
		return f, fmt.Errorf("restore: %w", err)
	case errors.Is(err, store.ErrSchemaTooNew):
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
