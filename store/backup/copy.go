package backup

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/eventlite/eventlite/internal/inside"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/internal/driver"
)

// ErrCopyMismatch: the rows a copy wrote do not read back as the source's
// (a table's row count, the events' digest or the position sequence
// differ). The copy's transaction was rolled back. Permanent: report it.
var ErrCopyMismatch = errors.New("the copy does not match its source")

// copyTables are the tables Copy moves, in the order it writes them
// (every table a row references comes before it: events before the
// outbox). Read-model tables are not among them: the read models are
// rebuilt from the log on the target (CopyOptions.Rebuild).
var copyTables = []string{
	"streams", "events", "event_tags", "outbox", "outbox_counters", "outbox_watermark",
	"operations", "snapshots", "leases", "checkpoints", "projections",
	"quarantine", "position_holes", "version_gaps", "inbox", "consumer_versions", "deferred",
	"version_conflicts", "consumer_stats", "rebuilds", "rebuild_generations",
	"effects", "retention_policies", "removed_ranges", "removed_event_ids",
	"erasure_keys", "erasure_streams",
}

// copyIdentities are the columns whose ids the target numbers itself
// after the copy: Copy keeps the source's ids and moves the target's
// sequence past them.
var copyIdentities = [][2]string{{"quarantine", "id"}, {"version_conflicts", "id"}}

// copySeeded are the tables a new store's migration fills with rows of
// zeros (the outbox's counters and watermark): a target whose rows there
// are all zeros is still empty, and the copy replaces them.
var copySeeded = map[string]bool{"outbox_counters": true, "outbox_watermark": true}

// copyBatch is how many rows Copy hands the target at once.
const copyBatch = 1000

// CopyOptions configures Copy. The zero value (or nil) means the
// defaults documented on each field.
type CopyOptions struct {
	// Force copies even while a lease in the source is held (an owner,
	// not expired): a relay, runner or rebuild may then still be writing
	// to the source, and what it writes after the snapshot is not
	// copied. Default false: such a copy is refused with a
	// *LiveLeaseError.
	Force bool
	// Target configures the store opened on the target (its Schema,
	// BusyTimeout, MasterKey, Logger...); ReadOnly is ignored. Default:
	// the defaults of store.Options.
	Target *store.Options
	// Progress, when set, is called on Copy's goroutine after every
	// batch of rows and at each change of phase; keep it quick.
	Progress func(CopyProgress)
	// Rebuild, when set, runs on the target store after the copy
	// committed and passed its checks: rebuild the read models there
	// (the store cannot: projections are defined above it). Its error is
	// Copy's, the copy staying committed.
	Rebuild func(ctx context.Context, target *store.Store) error
	// ForgetsFrom names a store (a SQLite file or a postgres://
	// address, opened read-only) whose forgotten subjects the copy must
	// not bring back: typically the live store the source file is an
	// older backup of. A subject forgotten there and not in the source
	// refuses the copy with an *UnforgetError (ErrUnforget), nothing
	// written, unless ReapplyForgets. Default "": the source's own
	// forgets are copied as they are, and nothing else is known.
	ForgetsFrom string
	// ReapplyForgets forgets those subjects again in the target, in the
	// copy's transaction after it read itself back: keys destroyed or
	// tombstones kept as ForgetsFrom has them, snapshots dropped,
	// copies and outbox error texts cleared, ciphertext removed.
	// Default false.
	ReapplyForgets bool
}

// CopyPhase is a stage of a copy.
type CopyPhase string

// The phases, in order.
const (
	CopyPhaseRows    CopyPhase = "copy"    // writing the tables' rows
	CopyPhaseVerify  CopyPhase = "verify"  // the target's invariants
	CopyPhaseRebuild CopyPhase = "rebuild" // CopyOptions.Rebuild
	CopyPhaseDone    CopyPhase = "done"
)

// CopyProgress reports a copy's progress.
type CopyProgress struct {
	Phase CopyPhase
	// Table is the table being written in CopyPhaseRows.
	Table string
	// Done counts the rows written so far, of Total rows in all tables.
	Done, Total int64
}

// CopyResult describes a finished copy.
type CopyResult struct {
	// Source is the SQLite file's absolute path; Target the PostgreSQL
	// address without its password, and Schema the target's schema.
	Source, Target string
	// Tables counts the rows copied per table, in copy order.
	Tables []CopiedTable
	// Rows counts all rows, Events the events.
	Rows, Events int64
	// Sequence is the last position handed out in the source, and now
	// in the target: its next append takes Sequence+1.
	Sequence int64
	// Digest is the hex SHA-256 over every event's columns in position
	// order, equal on both sides.
	Digest string
	// ReleasedLeases are the leases that were held in the source when it
	// was read (with Force). Every lease arrives released (no owner, its
	// token kept, so that a fence taken before the copy stays stale).
	ReleasedLeases []string
	// Committed: the copy is in the target, checked by counts, digest and
	// sequence. Copy may still fail after that, on the target's
	// invariants or in Rebuild.
	Committed bool
	// Reforgotten lists the subjects forgotten again in the target
	// (CopyOptions.ReapplyForgets), in (tenant, subject) order.
	Reforgotten []ForgottenSubject
	// Elapsed is how long the copy took, the rebuild included.
	Elapsed time.Duration
}

// CopiedTable is one table's row count.
type CopiedTable struct {
	Name string
	Rows int64
}

// LiveLeaseError: Copy found leases held in the source. errors.Is(err,
// store.ErrLeaseHeld) holds for it.
type LiveLeaseError struct {
	Leases []string // "resource (owner)"
}

func (e *LiveLeaseError) Error() string {
	return fmt.Sprintf("%v: %s: stop the processes that hold them (relay, runners, replays) or wait until they expire, or copy anyway with --force (CopyOptions.Force)",
		store.ErrLeaseHeld, strings.Join(e.Leases, ", "))
}

// Unwrap lets errors.Is(err, store.ErrLeaseHeld) match.
func (e *LiveLeaseError) Unwrap() error { return store.ErrLeaseHeld }

// CopyTargetError: the target a copy would write into already holds
// store rows. errors.Is(err, ErrTargetNotEmpty) holds for it.
type CopyTargetError struct {
	Target   string        // the address without its password
	Rows     []CopiedTable // the tables with rows
	Sequence int64         // the target's last position handed out
}

func (e *CopyTargetError) Error() string {
	parts := make([]string, 0, len(e.Rows)+1)
	for _, t := range e.Rows {
		parts = append(parts, fmt.Sprintf("%s %d", t.Name, t.Rows))
	}
	if e.Sequence > 0 {
		parts = append(parts, fmt.Sprintf("head position %d", e.Sequence))
	}
	return fmt.Sprintf("the target schema is not empty (%s); it was left unchanged: copy into a new schema (eventlite_schema=NAME in the address)",
		strings.Join(parts, ", "))
}

// Unwrap lets errors.Is(err, ErrTargetNotEmpty) match.
func (e *CopyTargetError) Unwrap() error { return ErrTargetNotEmpty }

// Copy copies the store in the SQLite file from into the PostgreSQL
// store at the address to (a postgres:// URL; its schema is created and
// migrated if it does not exist).
//
// It reads one snapshot of the source, in one read transaction, which it
// opens read-only (never migrating it: an older schema is
// store.ErrSchemaTooOld; a missing file store.ErrNotFound). While a lease in the
// source is held it refuses with a *LiveLeaseError, unless Force. It
// writes in one transaction of the target's writer, after checking under
// the target's write lock that the target holds no store rows and has
// handed out no position (else a *CopyTargetError, nothing written):
// every table of the store, rows with their keys and ids as they are
// (events byte for byte with their positions and times), leases
// released with their tokens kept; the target's last position handed
// out becomes the source's (the next append follows it, even when a
// scavenge removed the newest events), and the identity sequences of
// quarantine and version_conflicts move past the copied ids.
//
// Before it commits, the copy reads itself back in that transaction: the
// row count of every table, a SHA-256 over every event's columns in
// position order and the sequence must equal the source's, else nothing
// commits and the error matches ErrCopyMismatch. After the commit it
// runs the target's CheckInvariants, then Rebuild. Read models are not
// copied: rebuild each projection's on the target (the CLI's copy
// rebuilds the built-in catalog; a projection of your own needs a replay
// from scratch before its runner starts there).
//
// A value the target cannot hold exactly is store.ErrUnsupported, and so is a
// source that is not a SQLite file or a target that is not PostgreSQL.
func Copy(ctx context.Context, from, to string, opts *CopyOptions) (res CopyResult, err error) {
	start := time.Now()
	defer func() { res.Elapsed = time.Since(start) }()
	var o CopyOptions
	if opts != nil {
		o = *opts
	}
	var topts store.Options
	if o.Target != nil {
		topts = *o.Target
	}
	topts.ReadOnly = false
	if o.Progress == nil {
		o.Progress = func(CopyProgress) {}
	}
	if from == "" || to == "" {
		return res, errors.New("backup: copy: empty source or target")
	}
	srcDrv, srcName, err := st.CopyDriver(from)
	if err != nil {
		return res, fmt.Errorf("backup: copy: %w", err)
	}
	dstDrv, dstName, err := st.CopyDriver(to)
	if err != nil {
		return res, fmt.Errorf("backup: copy: %w", err)
	}
	switch {
	case srcDrv.Dialect() != driver.SQLite:
		return res, fmt.Errorf("backup: copy from %s: %w: the source must be a SQLite file", srcName, store.ErrUnsupported)
	case dstDrv.Dialect() != driver.Postgres:
		return res, fmt.Errorf("backup: copy into %s: %w: the target must be a postgres:// address", dstName, store.ErrUnsupported)
	}

	src, err := store.Open(ctx, from, &store.Options{ReadOnly: true, Logger: topts.Logger, BusyTimeout: topts.BusyTimeout})
	if err != nil {
		return res, fmt.Errorf("copy: source: %w", err)
	}
	defer func() {
		if cerr := src.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("copy: close source: %w", cerr)
		}
	}()
	res.Source = src.Path()
	srcIn := store.Inner(inside.Key{}, src)
	cs, ok := srcIn.CopyExec().(driver.CopySource)
	if !ok {
		return res, fmt.Errorf("copy from %s: %w", res.Source, store.ErrUnsupported)
	}
	snap, err := srcIn.CopySnapshot(ctx)
	if err != nil {
		return res, fmt.Errorf("copy: source: %w", err)
	}
	defer func() { _ = snap.Rollback() }()
	plan, err := planCopy(ctx, cs, snap, o.Force)
	if err != nil {
		return res, fmt.Errorf("copy from %s: %w", res.Source, err)
	}
	res.ReleasedLeases = plan.live
	res.Sequence = plan.sequence
	back, err := copyUnforgets(ctx, srcIn.CopyExec(), snap, o, topts, res.Source)
	if err != nil {
		return res, err
	}

	dst, err := store.Open(ctx, to, &topts)
	if err != nil {
		return res, fmt.Errorf("copy: target: %w", err)
	}
	res.Target = dst.Path()
	dstEx := store.Inner(inside.Key{}, dst).CopyExec()
	ct, ok := dstEx.(driver.CopyTarget)
	if !ok {
		_ = dst.Close()
		return res, fmt.Errorf("copy into %s: %w", res.Target, store.ErrUnsupported)
	}
	err = plan.shapeTarget(ctx, dst, ct)
	if err == nil {
		err = dst.Update(ctx, func(tx *store.Tx) error {
			if err := plan.write(ctx, cs, snap, ct, tx, o.Progress, &res); err != nil {
				return err
			}
			if err := reapplyForgets(ctx, dstEx, tx, back); err != nil {
				return err
			}
			res.Reforgotten = subjectsOf(back)
			return nil
		})
	}
	var te *CopyTargetError
	if errors.As(err, &te) {
		te.Target = res.Target
	}
	if cerr := dst.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("copy: close target: %w", cerr)
	}
	if err != nil {
		return res, fmt.Errorf("copy into %s: %w", res.Target, err)
	}
	res.Committed = true
	_ = snap.Rollback()

	// Reopen the target: the checks and the rebuild see it as any later
	// process will.
	o.Progress(CopyProgress{Phase: CopyPhaseVerify, Done: res.Rows, Total: res.Rows})
	dst, err = store.Open(ctx, to, &topts)
	if err != nil {
		return res, fmt.Errorf("copy: reopen target: %w", err)
	}
	defer func() {
		if cerr := dst.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("copy: close target: %w", cerr)
		}
	}()
	if err := announceForgets(ctx, dst, res.Reforgotten); err != nil {
		return res, fmt.Errorf("copy into %s: committed, with the subjects forgotten again, but announcing it: %w", res.Target, err)
	}
	if err := dst.CheckInvariants(ctx); err != nil {
		return res, fmt.Errorf("copy into %s: committed, but the target's invariants: %w", res.Target, err)
	}
	if o.Rebuild != nil {
		o.Progress(CopyProgress{Phase: CopyPhaseRebuild, Done: res.Rows, Total: res.Rows})
		if err := o.Rebuild(ctx, dst); err != nil {
			return res, fmt.Errorf("copy into %s: committed and verified, but the rebuild of its read models: %w", res.Target, err)
		}
	}
	o.Progress(CopyProgress{Phase: CopyPhaseDone, Done: res.Rows, Total: res.Rows})
	return res, nil
}

// copyUnforgets reads the forgotten subjects of o.ForgetsFrom and
// returns those the source's snapshot q would bring back: an
// *UnforgetError unless o.ReapplyForgets.
func copyUnforgets(ctx context.Context, ex driver.Executor, q driver.ReadQuerier, o CopyOptions, topts store.Options, source string) ([]driver.ForgottenKey, error) {
	if o.ForgetsFrom == "" {
		return nil, nil
	}
	ref, err := store.Open(ctx, o.ForgetsFrom, &store.Options{ReadOnly: true, Logger: topts.Logger, BusyTimeout: topts.BusyTimeout})
	if err != nil {
		return nil, fmt.Errorf("copy: the store to take the forgets from: %w", err)
	}
	defer ref.Close()
	refIn := store.Inner(inside.Key{}, ref)
	forgotten, err := refIn.CopyExec().ForgottenSubjects(ctx, refIn.CopyReader())
	if err != nil {
		return nil, fmt.Errorf("copy: read the forgotten subjects of %s: %w", ref.Path(), mapErr(err))
	}
	back, err := unforgotten(ctx, ex, q, forgotten)
	if err != nil {
		return nil, fmt.Errorf("copy: compare the source's keys with the forgotten subjects: %w", err)
	}
	if len(back) > 0 && !o.ReapplyForgets {
		return nil, &UnforgetError{Op: "copy", Source: source, Subjects: subjectsOf(back)}
	}
	return back, nil
}

// copyPlan is what Copy read of the source before writing: each table's
// columns, key and rows, and the sequence.
type copyPlan struct {
	tables   []copyTable
	sequence int64
	total    int64
	live     []string
}

type copyTable struct {
	name string
	cols []string // the source's, in its order
	key  []string // the source's primary key: the order rows are read in
	rows int64
}

// planCopy reads, in the source's snapshot q, the leases held, the
// tables' shapes and counts, and the sequence.
func planCopy(ctx context.Context, cs driver.CopySource, q driver.ReadQuerier, force bool) (copyPlan, error) {
	var p copyPlan
	live, err := cs.CopyLiveLeases(ctx, q)
	if err != nil {
		return p, fmt.Errorf("read leases: %w", mapErr(err))
	}
	for _, l := range live {
		p.live = append(p.live, fmt.Sprintf("%s (%s)", l.Resource, l.Owner))
	}
	if len(p.live) > 0 && !force {
		return p, &LiveLeaseError{Leases: p.live}
	}
	for _, name := range copyTables {
		sh, err := cs.CopyColumns(ctx, q, name)
		if err != nil {
			return p, fmt.Errorf("columns of %s: %w", name, mapErr(err))
		}
		if !sh.Exists {
			return p, fmt.Errorf("no table %s: %w", name, store.ErrSchemaTooOld)
		}
		key := sh.PK
		if len(key) == 0 {
			key = sh.Cols
		}
		n, err := cs.CopyCount(ctx, q, name)
		if err != nil {
			return p, fmt.Errorf("count %s: %w", name, mapErr(err))
		}
		p.tables = append(p.tables, copyTable{name: name, cols: sh.Cols, key: key, rows: n})
		p.total += n
	}
	if p.sequence, err = cs.CopySequence(ctx, q); err != nil {
		return p, fmt.Errorf("read the position sequence: %w", mapErr(err))
	}
	return p, nil
}

// shapeTarget checks that every table of the target has the source's
// columns, no more and no fewer.
func (p *copyPlan) shapeTarget(ctx context.Context, dst *store.Store, ct driver.CopyTarget) error {
	for _, t := range p.tables {
		sh, err := ct.CopyColumns(ctx, store.Inner(inside.Key{}, dst).CopyReader(), t.name)
		if err != nil {
			return fmt.Errorf("columns of %s: %w", t.name, mapErr(err))
		}
		a, b := slices.Clone(t.cols), slices.Clone(sh.Cols)
		slices.Sort(a)
		slices.Sort(b)
		if !slices.Equal(a, b) {
			return fmt.Errorf("table %s has columns %v in the source and %v in the target: %w", t.name, t.cols, sh.Cols, store.ErrUnsupported)
		}
	}
	return nil
}

// write copies every table in the target's transaction tx, after
// checking it holds nothing, then reads the copy back.
func (p *copyPlan) write(ctx context.Context, cs driver.CopySource, snap driver.ReadQuerier, ct driver.CopyTarget, tx *store.Tx, progress func(CopyProgress), res *CopyResult) error {
	if err := p.targetEmpty(ctx, ct, tx); err != nil {
		return err
	}
	res.Tables, res.Rows, res.Events = nil, 0, 0
	var digest string
	for _, t := range p.tables {
		progress(CopyProgress{Phase: CopyPhaseRows, Table: t.name, Done: res.Rows, Total: p.total})
		var (
			batch [][]any
			rows  int64
			h     *eventDigest
		)
		if t.name == "events" {
			h = newEventDigest()
		}
		flush := func() error {
			if err := ct.CopyInsert(ctx, tx, t.name, t.cols, batch); err != nil {
				return mapErr(err)
			}
			rows += int64(len(batch))
			batch = batch[:0]
			progress(CopyProgress{Phase: CopyPhaseRows, Table: t.name, Done: res.Rows + rows, Total: p.total})
			return nil
		}
		if copySeeded[t.name] {
			if err := ct.CopyDelete(ctx, tx, t.name); err != nil {
				return fmt.Errorf("clear the target's %s: %w", t.name, mapErr(err))
			}
		}
		release := leaseRelease(t)
		err := cs.CopyRows(ctx, snap, t.name, t.cols, t.key, func(row []any) error {
			if h != nil {
				h.add(row)
			}
			if release != nil {
				release(row)
			}
			batch = append(batch, row)
			if len(batch) < copyBatch {
				return nil
			}
			return flush()
		})
		if err == nil && len(batch) > 0 {
			err = flush()
		}
		if err != nil {
			return fmt.Errorf("copy %s: %w", t.name, mapErr(err))
		}
		if rows != t.rows {
			return fmt.Errorf("%w: %s: the snapshot counted %d rows and gave %d", ErrCopyMismatch, t.name, t.rows, rows)
		}
		if h != nil {
			digest = h.sum()
		}
		res.Tables = append(res.Tables, CopiedTable{Name: t.name, Rows: rows})
		res.Rows += rows
		if t.name == "events" {
			res.Events = rows
		}
	}
	if err := ct.CopySetSequence(ctx, tx, p.sequence); err != nil {
		return fmt.Errorf("set the position sequence: %w", mapErr(err))
	}
	for _, id := range copyIdentities {
		if err := ct.CopyIdentity(ctx, tx, id[0], id[1]); err != nil {
			return fmt.Errorf("move the ids of %s past the copied ones: %w", id[0], mapErr(err))
		}
	}
	return p.readBack(ctx, ct, tx, digest, res)
}

// targetEmpty refuses a target with store rows or a position handed out.
func (p *copyPlan) targetEmpty(ctx context.Context, ct driver.CopyTarget, q driver.ReadQuerier) error {
	e := &CopyTargetError{}
	for _, t := range p.tables {
		n, err := ct.CopyCount(ctx, q, t.name)
		if err != nil {
			return fmt.Errorf("count the target's %s: %w", t.name, mapErr(err))
		}
		if copySeeded[t.name] {
			if n, err = countSet(ctx, ct, q, t); err != nil {
				return fmt.Errorf("read the target's %s: %w", t.name, mapErr(err))
			}
		}
		if n > 0 {
			e.Rows = append(e.Rows, CopiedTable{Name: t.name, Rows: n})
		}
	}
	seq, err := ct.CopySequence(ctx, q)
	if err != nil {
		return fmt.Errorf("read the target's position sequence: %w", mapErr(err))
	}
	e.Sequence = seq
	if len(e.Rows) > 0 || seq > 0 {
		return e
	}
	return nil
}

// countSet counts the rows of t on the target that hold a value other
// than zero outside the table's key.
func countSet(ctx context.Context, ct driver.CopyTarget, q driver.ReadQuerier, t copyTable) (int64, error) {
	var n int64
	err := ct.CopyRows(ctx, q, t.name, t.cols, t.key, func(row []any) error {
		for i, v := range row {
			if !slices.Contains(t.key, t.cols[i]) && v != int64(0) {
				n++
				break
			}
		}
		return nil
	})
	return n, err
}

// readBack compares the copy, read in the target's transaction, with the
// source: every table's count, the events' digest and the sequence.
func (p *copyPlan) readBack(ctx context.Context, ct driver.CopyTarget, q driver.ReadQuerier, digest string, res *CopyResult) error {
	var diffs []string
	for _, t := range p.tables {
		n, err := ct.CopyCount(ctx, q, t.name)
		if err != nil {
			return fmt.Errorf("count the copied %s: %w", t.name, mapErr(err))
		}
		if n != t.rows {
			diffs = append(diffs, fmt.Sprintf("%s: %d rows in the source, %d in the target", t.name, t.rows, n))
		}
		if t.name != "events" {
			continue
		}
		h := newEventDigest()
		if err := ct.CopyRows(ctx, q, t.name, t.cols, t.key, func(row []any) error { h.add(row); return nil }); err != nil {
			return fmt.Errorf("read the copied events: %w", mapErr(err))
		}
		if got := h.sum(); got != digest {
			diffs = append(diffs, fmt.Sprintf("events: digest %s in the source, %s in the target", digest, got))
		}
	}
	seq, err := ct.CopySequence(ctx, q)
	if err != nil {
		return fmt.Errorf("read the copied position sequence: %w", mapErr(err))
	}
	if seq != p.sequence {
		diffs = append(diffs, fmt.Sprintf("position sequence %d in the source, %d in the target", p.sequence, seq))
	}
	if len(diffs) > 0 {
		return fmt.Errorf("%w (nothing was committed): %s", ErrCopyMismatch, strings.Join(diffs, "; "))
	}
	res.Digest = digest
	return nil
}

// leaseRelease returns, for the leases table, what releases a copied
// lease as ReleaseLease does (no owner, no expiry) with its token kept,
// so that a fence taken before the copy is stale on the target too; nil
// for any other table.
func leaseRelease(t copyTable) func(row []any) {
	if t.name != "leases" {
		return nil
	}
	owner, expires := slices.Index(t.cols, "owner"), slices.Index(t.cols, "expires_at")
	return func(row []any) {
		if owner >= 0 {
			row[owner] = ""
		}
		if expires >= 0 {
			row[expires] = int64(0)
		}
	}
}

// eventDigest hashes rows of values so that both engines' forms of one
// value hash alike: text and bytes by their bytes, integers by their
// value, NULL apart from both.
type eventDigest struct {
	h   hash.Hash
	buf []byte
}

func newEventDigest() *eventDigest { return &eventDigest{h: sha256.New()} }

func (d *eventDigest) add(row []any) {
	b := d.buf[:0]
	b = binary.AppendUvarint(b, uint64(len(row)))
	for _, v := range row {
		switch v := v.(type) {
		case nil:
			b = append(b, 'N')
		case int64:
			b = binary.BigEndian.AppendUint64(append(b, 'I'), uint64(v))
		case float64:
			b = binary.BigEndian.AppendUint64(append(b, 'F'), math.Float64bits(v))
		case string:
			b = append(binary.AppendUvarint(append(b, 'B'), uint64(len(v))), v...)
		case []byte:
			b = append(binary.AppendUvarint(append(b, 'B'), uint64(len(v))), v...)
		case bool:
			t := byte(0)
			if v {
				t = 1
			}
			b = append(b, 'T', t)
		default:
			s := fmt.Sprint(v)
			b = append(binary.AppendUvarint(append(b, '?'), uint64(len(s))), s...)
		}
	}
	d.buf = b
	d.h.Write(b)
}

func (d *eventDigest) sum() string { return hex.EncodeToString(d.h.Sum(nil)) }
