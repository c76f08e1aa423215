package projection_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/projection"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/storetest"
)

// countingProjection records every application of every event, so a test
// sees an event applied twice (n = 2) or skipped (no row).
func countingProjection(name string, fail func(e envelope.Event) error) projection.Projection {
	return projection.Projection{
		Name:   name,
		Tables: []projection.Table{{Name: name + "_applied", Schema: `CREATE TABLE {table} (position INTEGER PRIMARY KEY, n INTEGER NOT NULL)`}},
		Apply: func(ctx context.Context, tx *projection.Tx, e envelope.Event) error {
			if fail != nil {
				if err := fail(e); err != nil {
					return err
				}
			}
			_, err := tx.ExecContext(ctx, `INSERT INTO `+tx.Table(name+"_applied")+` (position, n) VALUES (?, 1)
				ON CONFLICT (position) DO UPDATE SET n = n + 1`, e.Position)
			return err
		},
	}
}

func appendN(t testing.TB, s *store.Store, stream string, n int) store.AppendResult {
	t.Helper()
	evs := make([]envelope.Event, n)
	for i := range evs {
		e, _ := envelope.New("thing.happened", map[string]int{"i": i})
		e.Source = "/test"
		evs[i] = e
	}
	res, err := s.Append(context.Background(), "default", stream, store.Any, evs...)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// applied reads the counting table: position -> times applied.
func applied(t testing.TB, s *store.Store, table string) map[int64]int {
	t.Helper()
	out := map[int64]int{}
	err := s.Update(context.Background(), func(tx *store.Tx) error {
		rows, err := tx.QueryContext(context.Background(), `SELECT position, n FROM `+table)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var p int64
			var n int
			if err := rows.Scan(&p, &n); err != nil {
				return err
			}
			out[p] = n
		}
		return rows.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func checkExactlyOnce(t *testing.T, s *store.Store, table string, head int64, skip map[int64]bool) {
	t.Helper()
	got := applied(t, s, table)
	for p := int64(1); p <= head; p++ {
		if skip[p] {
			if got[p] != 0 {
				t.Errorf("position %d applied %d times, want skipped", p, got[p])
			}
			continue
		}
		if got[p] != 1 {
			t.Errorf("position %d applied %d times, want once", p, got[p])
		}
	}
}

func TestRunnerCatchUpAndFollow(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := storetest.MustOpen(t, nil)
	appendN(t, s, "a", 1200) // more than a batch
	r, err := projection.NewRunner(s, countingProjection("counting", nil), &projection.RunnerOptions{BatchSize: 500})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	res := appendN(t, s, "b", 30) // while it runs
	if err := projection.WaitFor(ctx, s, "counting", res.LastPosition()); err != nil {
		t.Fatal(err)
	}
	st, err := projection.StatsFor(ctx, s, "counting")
	if err != nil || st.Status != projection.StatusRunning || st.Lag != 0 || st.Checkpoint != 1230 {
		t.Errorf("stats while running: %+v %v", st, err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run after cancel: %v", err)
	}
	checkExactlyOnce(t, s, "counting_applied", 1230, nil)
	st, _ = projection.StatsFor(context.Background(), s, "counting")
	if st.Status != projection.StatusIdle {
		t.Errorf("after a clean stop the lease is released: status %s", st.Status)
	}
}

// TestWaitForTimesOut: a known projection whose runner does not run is
// waited for until ctx ends.
func TestWaitForTimesOut(t *testing.T) {
	s := storetest.MustOpen(t, nil)
	res := appendN(t, s, "a", 3)
	if _, err := projection.NewRunner(s, countingProjection("nobody", nil), nil); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	err := projection.WaitFor(ctx, s, "nobody", res.LastPosition())
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("want a deadline error, got %v", err)
	}
}

// TestWaitForUnknownProjection: a name WaitFor does not know fails at
// once, naming the known ones; a runner built, started in a goroutine,
// then an append and a wait never fails on a new database; another
// store handle (another process) knows the projection once its runner
// ran.
func TestWaitForUnknownProjection(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "known.db")
	s := storetest.MustOpenPath(t, path, nil)
	r, err := projection.NewRunner(s, countingProjection("counting", nil), nil)
	if err != nil {
		t.Fatal(err)
	}
	rctx, stop := context.WithCancel(ctx)
	ran := make(chan error, 1)
	go func() { ran <- r.Run(rctx) }()
	defer func() {
		stop()
		if err := <-ran; err != nil {
			t.Error(err)
		}
	}()
	res := appendN(t, s, "a", 1)
	err = projection.WaitFor(ctx, s, "countin", res.LastPosition())
	want := `wait for projection "countin": unknown projection: no runner was built for it in this process (projection.NewRunner) and the store has no record of it (known: counting); check the name`
	if !errors.Is(err, projection.ErrUnknownProjection) || err.Error() != want {
		t.Errorf("misspelled name:\n got %v\nwant %s", err, want)
	}
	if err := projection.WaitFor(ctx, s, "counting", res.LastPosition()); err != nil {
		t.Fatal(err)
	}
	other := storetest.MustOpenPath(t, path, nil)
	if err := projection.WaitFor(ctx, other, "counting", res.LastPosition()); err != nil {
		t.Errorf("another handle, after the runner ran: %v", err)
	}
	err = projection.WaitFor(ctx, other, "nope", res.LastPosition())
	want = `wait for projection "nope": unknown projection: no runner was built for it in this process (projection.NewRunner) and the store has no record of it (known: counting); check the name`
	if err == nil || err.Error() != want {
		t.Errorf("another handle, unknown name:\n got %v\nwant %s", err, want)
	}
}

func TestTypeFilterPassesOtherEvents(t *testing.T) {
	ctx := context.Background()
	s := storetest.MustOpen(t, nil)
	appendN(t, s, "a", 10)
	e, _ := envelope.New("wanted", 1)
	e.Source = "/t"
	if _, err := s.Append(ctx, "default", "b", store.Any, e); err != nil {
		t.Fatal(err)
	}
	appendN(t, s, "a", 5)
	p := countingProjection("filtered", nil)
	p.Types = []string{"wanted"}
	r, _ := projection.NewRunner(s, p, nil)
	cp, err := r.CatchUp(ctx)
	if err != nil || cp != 16 {
		t.Fatalf("CatchUp = %d, %v; want the head, 16", cp, err)
	}
	got := applied(t, s, "filtered_applied")
	if len(got) != 1 || got[11] != 1 {
		t.Errorf("applied %v, want only position 11", got)
	}
}

func TestHandlerFailureStopsThenResumes(t *testing.T) {
	ctx := context.Background()
	s := storetest.MustOpen(t, nil)
	appendN(t, s, "a", 20)
	var mu sync.Mutex
	broken := true
	calls := 0
	fail := func(e envelope.Event) error {
		mu.Lock()
		defer mu.Unlock()
		if e.Position == 7 && broken {
			calls++
			return errors.New("bug in the handler")
		}
		return nil
	}
	r, _ := projection.NewRunner(s, countingProjection("fragile", fail), &projection.RunnerOptions{MaxAttempts: 3})
	err := r.Run(ctx)
	var se *projection.StoppedError
	if !errors.As(err, &se) || !errors.Is(err, projection.ErrStopped) || se.Position != 7 || se.Attempts != 3 {
		t.Fatalf("want StoppedError at 7 after 3 attempts, got %v", err)
	}
	if calls != 3 {
		t.Errorf("handler tried %d times, want 3 (bounded)", calls)
	}
	if cp, _ := projection.Records(s).Checkpoint(ctx, "fragile"); cp != 6 {
		t.Errorf("checkpoint %d, want 6 (just before the failing event)", cp)
	}
	st, _ := projection.StatsFor(ctx, s, "fragile")
	if st.Status != projection.StatusStopped || st.Quarantined != 1 {
		t.Errorf("stats: %+v", st)
	}
	q, _ := projection.Quarantine(s).Events(ctx, projection.QuarantineFilter{Consumer: "fragile", Open: true})
	if len(q) != 1 || q[0].Position != 7 || q[0].Attempts != 3 || q[0].Error == "" || len(q[0].Event) == 0 {
		t.Errorf("quarantine: %+v", q)
	}
	// Fixed: the restart resumes exactly at the event.
	mu.Lock()
	broken = false
	mu.Unlock()
	if _, err := r.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	checkExactlyOnce(t, s, "fragile_applied", 20, nil)
	st, _ = projection.StatsFor(ctx, s, "fragile")
	if st.Status != projection.StatusIdle || st.Quarantined != 0 {
		t.Errorf("after the fix: %+v", st)
	}
}

func TestHandlerFailureSkip(t *testing.T) {
	ctx := context.Background()
	s := storetest.MustOpen(t, nil)
	appendN(t, s, "a", 10)
	fail := func(e envelope.Event) error {
		if e.Position == 4 {
			return errors.New("cannot apply")
		}
		return nil
	}
	r, _ := projection.NewRunner(s, countingProjection("skipper", fail), &projection.RunnerOptions{OnError: projection.Skip})
	if cp, err := r.CatchUp(ctx); err != nil || cp != 10 {
		t.Fatalf("CatchUp = %d, %v", cp, err)
	}
	checkExactlyOnce(t, s, "skipper_applied", 10, map[int64]bool{4: true})
	q, _ := projection.Quarantine(s).Events(ctx, projection.QuarantineFilter{Consumer: "skipper", Open: true})
	if len(q) != 1 || q[0].Position != 4 {
		t.Errorf("quarantine: %+v", q)
	}
}

func TestOneActiveRunner(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := storetest.MustOpen(t, nil)
	appendN(t, s, "a", 50)
	p := countingProjection("shared", nil)
	opts := &projection.RunnerOptions{LeaseTTL: 2 * time.Second}
	ctx1, stop1 := context.WithCancel(ctx)
	r1, _ := projection.NewRunner(s, p, &projection.RunnerOptions{LeaseTTL: opts.LeaseTTL, Owner: "one"})
	r2, _ := projection.NewRunner(s, p, &projection.RunnerOptions{LeaseTTL: opts.LeaseTTL, Owner: "two"})
	// A runner that fails ends the waits below with its error, rather
	// than leaving WaitFor to wait for a checkpoint nobody moves.
	waitCtx, failed := context.WithCancelCause(ctx)
	defer failed(nil)
	waitFor := func(pos int64) {
		t.Helper()
		wctx, wcancel := context.WithTimeout(waitCtx, 2*time.Minute)
		defer wcancel()
		if err := projection.WaitFor(wctx, s, "shared", pos); err != nil {
			t.Fatalf("WaitFor %d: %v (cause: %v)", pos, err, context.Cause(waitCtx))
		}
	}
	done1, done2 := make(chan error, 1), make(chan error, 1)
	run := func(r *projection.Runner, ctx context.Context, name string, done chan<- error) {
		err := r.Run(ctx)
		if err != nil {
			failed(fmt.Errorf("runner %s: %w", name, err))
		}
		done <- err
	}
	go run(r1, ctx1, "one", done1)
	waitFor(50)
	go run(r2, ctx, "two", done2)
	// r2 stands by while r1 holds the lease.
	leases, _ := s.Leases().List(ctx)
	if len(leases) != 1 || leases[0].Owner != "one" {
		t.Fatalf("leases %+v", leases)
	}
	stop1()
	if err := <-done1; err != nil {
		t.Fatal(err)
	}
	res := appendN(t, s, "a", 10)
	waitFor(res.LastPosition())
	leases, _ = s.Leases().List(ctx)
	if len(leases) != 1 || leases[0].Owner != "two" {
		t.Errorf("after the first stopped, the standby holds it: %+v", leases)
	}
	cancel()
	if err := <-done2; err != nil {
		t.Errorf("runner two: %v", err)
	}
	checkExactlyOnce(t, s, "shared_applied", 60, nil)
}

func TestHoleIsPassedAndRecorded(t *testing.T) {
	ctx := context.Background()
	// Not storetest.MustOpen: its invariant check would (rightly) fail on
	// the hole this test plants.
	s, err := store.Open(ctx, filepath.Join(t.TempDir(), "holey.db"), &store.Options{Synchronous: "NORMAL"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	appendN(t, s, "a", 5)
	appendN(t, s, "b", 5)
	// Plant a hole: positions 4..5 deleted behind the store's back. (No
	// code path deletes events; this stands for damage.)
	db, err := sql.Open("sqlite", s.Path())
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{`DELETE FROM outbox WHERE position IN (4, 5)`, `DELETE FROM events WHERE position IN (4, 5)`} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	r, _ := projection.NewRunner(s, countingProjection("holey", nil), nil)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if cp, err := r.CatchUp(ctx); err != nil || cp != 10 {
			t.Errorf("CatchUp = %d, %v", cp, err)
		}
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the runner waited for a hole")
	}
	holes, _ := projection.Records(s).RecordedHoles(ctx)
	if len(holes) != 1 || holes[0].From != 4 || holes[0].To != 5 || holes[0].DetectedBy != "holey" {
		t.Errorf("recorded holes %+v", holes)
	}
	checkExactlyOnce(t, s, "holey_applied", 10, map[int64]bool{4: true, 5: true})
}

func TestDeliverAtLeastOnce(t *testing.T) {
	ctx := context.Background()
	s := storetest.MustOpen(t, nil)
	appendN(t, s, "a", 30)
	var mu sync.Mutex
	seen := map[int64]int{}
	p := projection.Projection{Name: "outside", Deliver: func(ctx context.Context, e envelope.Event) error {
		mu.Lock()
		defer mu.Unlock()
		seen[e.Position]++
		if e.Position == 12 && seen[12] == 1 {
			return fmt.Errorf("transient")
		}
		return nil
	}}
	r, err := projection.NewRunner(s, p, nil)
	if err != nil {
		t.Fatal(err)
	}
	if cp, err := r.CatchUp(ctx); err != nil || cp != 30 {
		t.Fatalf("CatchUp = %d %v", cp, err)
	}
	for pos := int64(1); pos <= 30; pos++ {
		if seen[pos] == 0 {
			t.Errorf("position %d never delivered", pos)
		}
	}
	if seen[12] != 2 {
		t.Errorf("a transient failure is retried: %d deliveries", seen[12])
	}
}

func TestHandlerFailureSingleAttempt(t *testing.T) {
	ctx := context.Background()
	s := storetest.MustOpen(t, nil)
	appendN(t, s, "a", 5)
	calls := 0
	fail := func(e envelope.Event) error {
		if e.Position == 3 {
			calls++
			return errors.New("always")
		}
		return nil
	}
	r, _ := projection.NewRunner(s, countingProjection("once", fail), &projection.RunnerOptions{MaxAttempts: 1})
	var se *projection.StoppedError
	if _, err := r.CatchUp(ctx); !errors.As(err, &se) || se.Position != 3 || se.Attempts != 1 {
		t.Fatalf("want a stop at 3 after 1 attempt, got %v", err)
	}
	if calls != 1 {
		t.Errorf("handler tried %d times, want 1", calls)
	}
	if cp, _ := projection.Records(s).Checkpoint(ctx, "once"); cp != 2 {
		t.Errorf("checkpoint %d, want 2", cp)
	}
}
