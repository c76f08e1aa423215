package replay_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/internal/inside"
	"github.com/eventlite/eventlite/projection"
	"github.com/eventlite/eventlite/replay"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/storetest"
)

func newSeed(t *testing.T) *rand.Rand {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	return rand.New(rand.NewPCG(seed, 9))
}

// TestRebuildEqualsLive: on a random log, a rebuild of each projection
// (the catalog, and a ledger that reads two types) equals the read model
// its runner kept: a dry run compares them row by row (tx.CompareTables)
// and finds nothing, and after the swap direct reads find the same rows,
// the checkpoint at the head. A second rebuild after more events (a new
// generation, whose index names must not collide with the swapped-in
// ones) does too, and the runner carries on from the swapped checkpoint.
func TestRebuildEqualsLive(t *testing.T) {
	rng := newSeed(t)
	ctx := context.Background()
	s := storetest.MustOpen(t, nil)
	appendRandom(t, s, rng, 300+rng.IntN(300))
	for _, p := range []projection.Projection{projection.Catalog(), ledger("ledger", testTypes[:2], nil)} {
		t.Run(p.Name, func(t *testing.T) {
			for round := 1; round <= 2; round++ {
				catchUp(t, s, p)
				before := snapshot(t, s, p)
				opts := &replay.Options{BatchSize: 1 + rng.IntN(50)}
				dry := *opts
				dry.DryRun = true
				res, err := replay.Rebuild(ctx, s, p, &dry)
				if err != nil {
					t.Fatal(err)
				}
				if res.Drift.Total != 0 || res.Swapped || !res.DryRun || res.Checkpoint != before.Checkpoint {
					t.Errorf("round %d: dry run %+v, want no drift at %d", round, res, before.Checkpoint)
				}
				if diff := cmp.Diff(before, snapshot(t, s, p)); diff != "" {
					t.Errorf("round %d: the dry run changed the live read model (-before +after)\n%s", round, diff)
				}
				if sh := shadowTables(t, s); len(sh) != 0 {
					t.Errorf("round %d: shadow tables left after a dry run: %q", round, sh)
				}
				res, err = replay.Rebuild(ctx, s, p, opts)
				if err != nil {
					t.Fatal(err)
				}
				head, _ := s.Head(ctx)
				if !res.Swapped || res.Checkpoint != head || res.Generation != int64(2*round) {
					t.Errorf("round %d: rebuild %+v, want swapped at the head %d in generation %d", round, res, head, 2*round)
				}
				after := snapshot(t, s, p)
				if diff := cmp.Diff(before.Tables, after.Tables); diff != "" {
					t.Errorf("round %d: rebuilt read model differs from the live one (-live +rebuilt)\n%s", round, diff)
				}
				if after.Checkpoint != head {
					t.Errorf("round %d: checkpoint %d after the swap, want the head %d", round, after.Checkpoint, head)
				}
				if sh := shadowTables(t, s); len(sh) != 0 {
					t.Errorf("round %d: shadow tables left after the swap: %q", round, sh)
				}
				if _, ok, _ := projection.Rebuilds(s).Load(ctx, p.Name); ok {
					t.Errorf("round %d: the rebuild row outlived the swap", round)
				}
				appendRandom(t, s, rng, 50+rng.IntN(100))
			}
			catchUp(t, s, p)
			if p.Name == "ledger" {
				checkLedgerIsFold(t, s, "ledger", testTypes[:2])
			}
		})
	}
	catchUp(t, s, projection.Catalog())
	var got []projection.CatalogEntry
	if err := projection.ReadCatalog(ctx, s, "", func(e projection.CatalogEntry) error { got = append(got, e); return nil }); err != nil {
		t.Fatal(err)
	}
	var events int64
	for _, e := range got {
		for _, n := range e.EventsByType {
			events += n
		}
	}
	if head, _ := s.Head(ctx); events != head {
		t.Errorf("the catalog counts %d events, the log has %d", events, head)
	}
}

// TestDryRunReportsDrift: a dry run finds a live row missing, one extra
// and one different, each counted, and reports a clean read model as
// without drift. It never changes the live read model.
func TestDryRunReportsDrift(t *testing.T) {
	rng := newSeed(t)
	ctx := context.Background()
	s := storetest.MustOpen(t, nil)
	appendRandom(t, s, rng, 200)
	p := ledger("ledger", nil, nil)
	cp := catchUp(t, s, p)
	dry := func() replay.Drift {
		t.Helper()
		before := snapshot(t, s, p)
		res, err := replay.Rebuild(ctx, s, p, &replay.Options{DryRun: true})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(before, snapshot(t, s, p)); diff != "" {
			t.Errorf("the dry run changed the live read model (-before +after)\n%s", diff)
		}
		for i := range res.Drift.Tables {
			res.Drift.Tables[i].TableDiff.SchemaDiffers = false
		}
		return res.Drift
	}
	if d := dry(); d.Total != 0 {
		t.Errorf("clean read model: drift %+v", d)
	}
	victim := 1 + rng.Int64N(cp-1)
	steps := []struct {
		what  string
		sql   string
		table string
		want  store.TableDiff
	}{
		{"missing", fmt.Sprintf(`DELETE FROM ledger_entries WHERE position = %d`, victim), "ledger_entries", store.TableDiff{Missing: 1}},
		{"extra", `INSERT INTO ledger_entries VALUES (1000000, 'default', 'ghost', 'order.placed', 5)`, "ledger_entries", store.TableDiff{Missing: 1, Extra: 1}},
		{"different", fmt.Sprintf(`UPDATE ledger_entries SET amount = amount + 1 WHERE position = %d`, victim%cp+1), "ledger_entries", store.TableDiff{Missing: 1, Extra: 1, Different: 1}},
		{"different total", `UPDATE ledger_totals SET sum = sum - 1`, "ledger_totals", store.TableDiff{Different: 1}},
	}
	for _, st := range steps {
		execSQL(t, s, st.sql)
		d := dry()
		var got store.TableDiff
		for _, td := range d.Tables {
			if td.Table == st.table {
				got = td.TableDiff
			}
		}
		if diff := cmp.Diff(st.want, got); diff != "" {
			t.Errorf("after the %s row: %s (-want +got)\n%s", st.what, st.table, diff)
		}
		if d.Total != d.Missing+d.Extra+d.Different || d.Total == 0 {
			t.Errorf("after the %s row: totals %+v", st.what, d)
		}
	}
	// A replay repairs it; a dry run then finds nothing.
	if _, err := replay.Rebuild(ctx, s, p, nil); err != nil {
		t.Fatal(err)
	}
	if d := dry(); d.Total != 0 {
		t.Errorf("after the replay: drift %+v", d)
	}
	checkLedgerIsFold(t, s, "ledger", nil)
}

// TestDryRunComparesAtTheLiveCheckpoint: a live read model that lags
// behind the log is behind, not drifted: the dry run compares at its
// checkpoint.
func TestDryRunComparesAtTheLiveCheckpoint(t *testing.T) {
	rng := newSeed(t)
	ctx := context.Background()
	s := storetest.MustOpen(t, nil)
	appendRandom(t, s, rng, 100)
	p := ledger("ledger", nil, nil)
	cp := catchUp(t, s, p)
	appendRandom(t, s, rng, 50) // the runner has not seen these
	res, err := replay.Rebuild(ctx, s, p, &replay.Options{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.Drift.Total != 0 || res.Checkpoint != cp {
		t.Errorf("dry run of a lagging read model: %+v, want no drift at %d", res, cp)
	}
}

// TestHandlerFailureNamesThePosition: a handler that fails at some
// position fails the rebuild with an error naming it; the live read model
// and its checkpoint are untouched. After the fix the rerun resumes where
// the shadow stopped and finishes. Both with Apply alone and with an
// ApplyBatch (whose failure is traced to the event with Apply).
func TestHandlerFailureNamesThePosition(t *testing.T) {
	rng := newSeed(t)
	ctx := context.Background()
	for _, batch := range []bool{false, true} {
		t.Run(fmt.Sprintf("ApplyBatch=%v", batch), func(t *testing.T) {
			s := storetest.MustOpen(t, nil)
			appendRandom(t, s, rng, 300)
			head, _ := s.Head(ctx)
			bad := 1 + rng.Int64N(head)
			broken := true
			fail := func(e envelope.Event) error {
				if broken && e.Position == bad {
					return errors.New("cannot handle this one")
				}
				return nil
			}
			p := ledger("ledger", nil, nil)
			catchUp(t, s, p)
			before := snapshot(t, s, p)
			p = ledger("ledger", nil, fail)
			if batch {
				apply := p.Apply
				p.ApplyBatch = func(ctx context.Context, tx *projection.Tx, events []envelope.Event) error {
					for _, e := range events {
						if err := apply(ctx, tx, e); err != nil {
							return errors.New("somewhere in the batch")
						}
					}
					return nil
				}
			}
			_, err := replay.Rebuild(ctx, s, p, &replay.Options{BatchSize: 1 + rng.IntN(40)})
			var he *replay.HandlerError
			if !errors.As(err, &he) || !errors.Is(err, replay.ErrHandler) || he.Position != bad {
				t.Fatalf("Rebuild = %v; want a *HandlerError at position %d", err, bad)
			}
			if !strings.Contains(err.Error(), fmt.Sprintf("position %d", bad)) || !strings.Contains(err.Error(), "cannot handle this one") {
				t.Errorf("the error does not name the position and the cause: %v", err)
			}
			if diff := cmp.Diff(before, snapshot(t, s, p)); diff != "" {
				t.Errorf("a failed rebuild changed the live read model (-before +after)\n%s", diff)
			}
			row, ok, err := projection.Rebuilds(s).Load(ctx, "ledger")
			if err != nil || !ok || row.Checkpoint >= bad {
				t.Fatalf("rebuild row after the failure: %+v %v %v; want one before position %d", row, ok, err, bad)
			}
			broken = false
			res, err := replay.Rebuild(ctx, s, p, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !res.Resumed || res.ResumedFrom != row.Checkpoint || res.Generation != row.Generation || !res.Swapped {
				t.Errorf("rerun %+v; want it resumed from %d in generation %d", res, row.Checkpoint, row.Generation)
			}
			checkLedgerIsFold(t, s, "ledger", nil)
		})
	}
}

// TestEventsAppendedWhileRebuildingAreIn: events appended during the
// rebuild (and its catch-up) are in the read model after the swap, with
// no runner around.
func TestEventsAppendedWhileRebuildingAreIn(t *testing.T) {
	rng := newSeed(t)
	ctx := context.Background()
	s := storetest.MustOpen(t, nil)
	appendRandom(t, s, rng, 200)
	p := ledger("ledger", nil, nil)
	catchUp(t, s, p)
	calls := 0
	var phases []replay.Phase
	res, err := replay.Rebuild(ctx, s, p, &replay.Options{BatchSize: 10, Progress: func(pr replay.Progress) {
		calls++
		if len(phases) == 0 || phases[len(phases)-1] != pr.Phase {
			phases = append(phases, pr.Phase)
		}
		if pr.Done > pr.Total || pr.Position > pr.Target {
			t.Errorf("progress past its total: %+v", pr)
		}
		// Past the watermark while rebuilding up to it, then some during
		// the catch-up: more than a batch each, so the catch-up has work
		// outside the swap's transaction too.
		if calls == 3 || (pr.Phase == replay.PhaseCatchUp && calls < 40) {
			appendRandom(t, s, rng, 15)
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	head, _ := s.Head(ctx)
	if res.Watermark >= head || res.Checkpoint != head {
		t.Errorf("rebuild %+v: want a watermark below the head %d and the checkpoint at it", res, head)
	}
	if diff := cmp.Diff([]replay.Phase{replay.PhaseRebuild, replay.PhaseCatchUp, replay.PhaseSwap, replay.PhaseDone}, compact(phases)); diff != "" {
		t.Errorf("phases (-want +got)\n%s", diff)
	}
	checkLedgerIsFold(t, s, "ledger", nil)
}

// compact drops phases seen again after another (the swap may give way
// to a catch-up and come back).
func compact(ps []replay.Phase) []replay.Phase {
	var out []replay.Phase
	seen := map[replay.Phase]bool{}
	for _, p := range ps {
		if !seen[p] {
			out = append(out, p)
			seen[p] = true
		}
	}
	return out
}

// TestInterruptResumeAndFromScratch: a rebuild stopped by its context
// leaves the live read model alone and says to run it again; the rerun
// resumes from the shadow's checkpoint; FromScratch instead drops the
// shadow and starts a new generation from 0.
func TestInterruptResumeAndFromScratch(t *testing.T) {
	rng := newSeed(t)
	ctx := context.Background()
	s := storetest.MustOpen(t, nil)
	appendRandom(t, s, rng, 300)
	p := ledger("ledger", nil, nil)
	catchUp(t, s, p)
	before := snapshot(t, s, p)
	interrupt := func(after int) {
		t.Helper()
		cctx, cancel := context.WithCancel(ctx)
		defer cancel()
		n := 0
		_, err := replay.Rebuild(cctx, s, p, &replay.Options{BatchSize: 20, Progress: func(replay.Progress) {
			if n++; n == after {
				cancel()
			}
		}})
		if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "run the replay again to resume") {
			t.Fatalf("interrupted Rebuild = %v", err)
		}
		if diff := cmp.Diff(before, snapshot(t, s, p)); diff != "" {
			t.Fatalf("an interrupted rebuild changed the live read model (-before +after)\n%s", diff)
		}
	}
	interrupt(3)
	row, ok, _ := projection.Rebuilds(s).Load(ctx, "ledger")
	if !ok || row.Checkpoint == 0 || row.Generation != 1 {
		t.Fatalf("rebuild row after the interrupt: %+v %v", row, ok)
	}
	if st, _ := projection.StatsFor(ctx, s, "ledger"); !strings.Contains(st.Detail, "resume") || st.Status == projection.StatusRebuilding {
		t.Errorf("stats of an interrupted rebuild: %+v", st)
	}
	interrupt(2)
	row2, _, _ := projection.Rebuilds(s).Load(ctx, "ledger")
	if row2.Generation != 1 || row2.Checkpoint <= row.Checkpoint {
		t.Errorf("second run: %+v; want it resumed in generation 1 past %d", row2, row.Checkpoint)
	}
	res, err := replay.Rebuild(ctx, s, p, &replay.Options{FromScratch: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.Resumed || res.Generation != 2 || res.AppliedNow != res.Applied {
		t.Errorf("from scratch: %+v; want generation 2 applying everything", res)
	}
	if sh := shadowTables(t, s); len(sh) != 0 {
		t.Errorf("shadow tables left: %q", sh)
	}
	checkLedgerIsFold(t, s, "ledger", nil)
}

// TestOneReplayAtATime: while a replay holds the rebuild lease, another
// is refused (store.ErrLeaseHeld) and the projection's stats say
// rebuilding.
func TestOneReplayAtATime(t *testing.T) {
	ctx := context.Background()
	s := storetest.MustOpen(t, nil)
	appendRandom(t, s, rand.New(rand.NewPCG(1, 2)), 20)
	p := ledger("ledger", nil, nil)
	catchUp(t, s, p)
	l, err := store.Inner(inside.Key{}, s).AcquireLease(ctx, projection.RebuildLeaseResource("ledger"), "someone-else", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := replay.Rebuild(ctx, s, p, nil); !errors.Is(err, store.ErrLeaseHeld) {
		t.Errorf("second replay: %v, want ErrLeaseHeld", err)
	}
	if st, err := projection.StatsFor(ctx, s, "ledger"); err != nil || st.Status != projection.StatusRebuilding {
		t.Errorf("stats while a replay holds the lease: %+v %v", st, err)
	}
	if err := store.Inner(inside.Key{}, s).ReleaseLease(ctx, l); err != nil {
		t.Fatal(err)
	}
	if st, _ := projection.StatsFor(ctx, s, "ledger"); st.Status != projection.StatusIdle {
		t.Errorf("stats after: %+v", st)
	}
	if _, err := replay.Rebuild(ctx, s, p, nil); err != nil {
		t.Errorf("replay once the lease is free: %v", err)
	}
}

// TestRebuildOfANewProjection: a projection that never ran is rebuilt
// into existence: its tables, checkpoint and status appear at the swap.
func TestRebuildOfANewProjection(t *testing.T) {
	ctx := context.Background()
	s := storetest.MustOpen(t, nil)
	appendRandom(t, s, rand.New(rand.NewPCG(3, 4)), 50)
	p := ledger("fresh", testTypes[1:2], nil)
	res, err := replay.Rebuild(ctx, s, p, nil)
	if err != nil || !res.Swapped {
		t.Fatalf("Rebuild = %+v, %v", res, err)
	}
	checkLedgerIsFold(t, s, "fresh", testTypes[1:2])
	st, err := projection.StatsFor(ctx, s, "fresh")
	if head, _ := s.Head(ctx); err != nil || st.Checkpoint != head || st.Status != projection.StatusIdle {
		t.Errorf("stats %+v %v", st, err)
	}
	// Its runner takes over from the swapped checkpoint.
	appendRandom(t, s, rand.New(rand.NewPCG(5, 6)), 30)
	catchUp(t, s, p)
	checkLedgerIsFold(t, s, "fresh", testTypes[1:2])
}

// TestRebuildClearsAStoppedProjection: a runner stopped on an event its
// handler failed on; the fixed handler's rebuild applies it, so the swap
// resolves the quarantine entry and the projection is no longer stopped.
func TestRebuildClearsAStoppedProjection(t *testing.T) {
	ctx := context.Background()
	s := storetest.MustOpen(t, nil)
	appendRandom(t, s, rand.New(rand.NewPCG(7, 8)), 40)
	bad := ledger("ledger", nil, func(e envelope.Event) error {
		if e.Position == 17 {
			return errors.New("bug")
		}
		return nil
	})
	r, _ := projection.NewRunner(s, bad, &projection.RunnerOptions{MaxAttempts: 1})
	if _, err := r.CatchUp(ctx); !errors.Is(err, projection.ErrStopped) {
		t.Fatalf("CatchUp = %v, want a stop", err)
	}
	if _, err := replay.Rebuild(ctx, s, ledger("ledger", nil, nil), nil); err != nil {
		t.Fatal(err)
	}
	st, _ := projection.StatsFor(ctx, s, "ledger")
	if st.Status != projection.StatusIdle || st.Quarantined != 0 {
		t.Errorf("stats after the rebuild: %+v", st)
	}
	checkLedgerIsFold(t, s, "ledger", nil)
}

func TestRebuildRefusesWhatItCannotRebuild(t *testing.T) {
	s := storetest.MustOpen(t, nil)
	p := projection.Projection{Name: "outside", Deliver: func(context.Context, envelope.Event) error { return nil }}
	if _, err := replay.Rebuild(context.Background(), s, p, nil); !errors.Is(err, replay.ErrNotRebuildable) {
		t.Errorf("Deliver projection: %v, want ErrNotRebuildable", err)
	}
}
