package projection_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/projection"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/drivertest"
	"github.com/eventlite/eventlite/store/storetest"
)

// waitQuarantine waits on commits until the open quarantine entries of
// name satisfy ok.
func waitQuarantine(t *testing.T, s *store.Store, name string, ok func([]projection.QuarantineEntry) bool) []projection.QuarantineEntry {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for {
		changed := s.Changed()
		qs, err := projection.Quarantine(s).Events(ctx, projection.QuarantineFilter{Consumer: name})
		if err != nil {
			t.Fatal(err)
		}
		if ok(qs) {
			return qs
		}
		select {
		case <-ctx.Done():
			t.Fatalf("quarantine of %s never got there: %+v", name, qs)
		case <-changed:
		}
	}
}

// TestRunnerAppliesRetriedEvent: a runner in Skip mode passed an event its
// handler failed on. Marked for retry while the handler is still broken,
// the runner tries it on its next pass and it stays quarantined with one
// more attempt; once the handler is fixed and the event marked again, the
// runner applies it (once) and resolves the entry.
func TestRunnerAppliesRetriedEvent(t *testing.T) {
	ctx := context.Background()
	s := storetest.MustOpen(t, nil)
	res := appendN(t, s, "s", 5)
	bad := res.Events[1]
	var broken atomic.Bool
	broken.Store(true)
	p := countingProjection("skipper", func(e envelope.Event) error {
		if e.ID == bad.ID && broken.Load() {
			return errors.New("handler bug")
		}
		return nil
	})
	r, err := projection.NewRunner(s, p, &projection.RunnerOptions{OnError: projection.Skip, MaxAttempts: 2, LeaseTTL: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	rctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- r.Run(rctx) }()
	defer func() {
		stop()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	if err := projection.WaitFor(ctx, s, "skipper", res.LastPosition()); err != nil {
		t.Fatal(err)
	}
	if n := applied(t, s, "skipper_applied")[bad.Position]; n != 0 {
		t.Fatalf("the failing event applied %d times", n)
	}
	// Retry while still broken: tried once more, stays open, mark cleared.
	if _, err := projection.Quarantine(s).Retry(ctx, "skipper", bad.ID); err != nil {
		t.Fatal(err)
	}
	qs := waitQuarantine(t, s, "skipper", func(qs []projection.QuarantineEntry) bool {
		return len(qs) == 1 && qs[0].RetryRequestedAt.IsZero() && qs[0].Attempts == 3
	})
	if !qs[0].ResolvedAt.IsZero() || qs[0].LastFailedAt.Before(qs[0].CreatedAt) {
		t.Fatalf("entry after a failed retry: %+v", qs[0])
	}
	// Fixed: the retry applies it.
	broken.Store(false)
	if _, err := projection.Quarantine(s).Retry(ctx, "skipper", bad.ID); err != nil {
		t.Fatal(err)
	}
	qs = waitQuarantine(t, s, "skipper", func(qs []projection.QuarantineEntry) bool { return len(qs) == 1 && !qs[0].ResolvedAt.IsZero() })
	if qs[0].Resolution != "retried" {
		t.Fatalf("resolution %q, want retried", qs[0].Resolution)
	}
	checkExactlyOnce(t, s, "skipper_applied", res.LastPosition(), nil)
	// Nothing open is left to act on.
	if _, err := projection.Quarantine(s).Retry(ctx, "skipper", bad.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("retry of a resolved entry: %v, want ErrNotFound", err)
	}
}

// TestSkipMovesStoppedProjectionOn: a projection stopped on an event;
// skipping the event moves its checkpoint past it, the projection is
// active again and a restarted runner goes on without it.
func TestSkipMovesStoppedProjectionOn(t *testing.T) {
	ctx := context.Background()
	s := storetest.MustOpen(t, nil)
	res := appendN(t, s, "s", 5)
	bad := res.Events[2]
	p := countingProjection("stopper", func(e envelope.Event) error {
		if e.ID == bad.ID {
			return errors.New("cannot handle this one")
		}
		return nil
	})
	r, err := projection.NewRunner(s, p, &projection.RunnerOptions{MaxAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.CatchUp(ctx); !errors.Is(err, projection.ErrStopped) || !strings.Contains(err.Error(), "eventlite quarantine skip stopper "+bad.ID) {
		t.Fatalf("CatchUp = %v, want ErrStopped naming the skip command", err)
	}
	if _, err := projection.Quarantine(s).Skip(ctx, "stopper", "no-such-event"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("skip of an unknown event: %v", err)
	}
	if _, err := projection.Quarantine(s).Skip(ctx, "nobody", bad.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("skip for an unknown name: %v", err)
	}
	if _, err := projection.Quarantine(s).Skip(ctx, "stopper", bad.ID); err != nil {
		t.Fatal(err)
	}
	st, err := projection.StatsFor(ctx, s, "stopper")
	if err != nil || st.Status == projection.StatusStopped || st.Checkpoint != bad.Position || st.Quarantined != 0 {
		t.Fatalf("after skip: %+v (%v)", st, err)
	}
	if cp, err := r.CatchUp(ctx); err != nil || cp != res.LastPosition() {
		t.Fatalf("CatchUp after skip = %d, %v", cp, err)
	}
	checkExactlyOnce(t, s, "stopper_applied", res.LastPosition(), map[int64]bool{bad.Position: true})
	qs, _ := projection.Quarantine(s).Events(ctx, projection.QuarantineFilter{Consumer: "stopper"})
	if len(qs) != 1 || qs[0].Resolution != "skipped" || qs[0].Kind != "projection" || qs[0].Type != "thing.happened" {
		t.Fatalf("entries %+v", qs)
	}
}

// TestConsumerAppliesRetriedEvent: an event a consumer could not interpret
// is quarantined; after the consumer learns the type, a retry applies it
// in aggregate order on the consumer's next pass, and the deferred
// successor it unblocks follows. A skipped one is never applied.
func TestConsumerAppliesRetriedEvent(t *testing.T) {
	ctx := context.Background()
	s := storetest.MustOpen(t, nil)
	var knows atomic.Bool
	drivertest.OrderView(t, s, projection.ConsumerOptions{Name: "setup"}) // creates order_view
	learning := projection.ConsumerOptions{Name: "orders"}
	learning.Apply = func(ctx context.Context, tx *store.Tx, e envelope.Event) error {
		if e.Type == "order.teleported" && !knows.Load() {
			return projection.ErrUninterpretable
		}
		status := strings.TrimPrefix(e.Type, "order.")
		_, err := tx.ExecContext(ctx, `INSERT INTO order_view (tenant, id, status, version) VALUES (?, ?, ?, ?)
			ON CONFLICT (tenant, id) DO UPDATE SET status = excluded.status, version = excluded.version`, e.Tenant, e.Stream, status, e.StreamVersion)
		return err
	}
	c, err := projection.NewConsumer(s, learning)
	if err != nil {
		t.Fatal(err)
	}
	drivertest.HandleWant(t, c, drivertest.OrderEvent("c1", "order-c", 1, "order.placed"), projection.Applied)
	drivertest.HandleWant(t, c, drivertest.OrderEvent("c2", "order-c", 2, "order.teleported"), projection.Quarantined)
	drivertest.HandleWant(t, c, drivertest.OrderEvent("c3", "order-c", 3, "order.shipped"), projection.Deferred)
	drivertest.HandleWant(t, c, drivertest.OrderEvent("d1", "order-d", 1, "order.teleported"), projection.Quarantined)
	if n, err := c.ApplyRetries(ctx); err != nil || n != 0 {
		t.Fatalf("ApplyRetries with nothing marked = %d, %v", n, err)
	}
	knows.Store(true)
	if _, err := projection.Quarantine(s).Retry(ctx, "orders", "c2"); err != nil {
		t.Fatal(err)
	}
	if _, err := projection.Quarantine(s).Skip(ctx, "orders", "d1"); err != nil {
		t.Fatal(err)
	}
	if n, err := c.ApplyRetries(ctx); err != nil || n != 1 {
		t.Fatalf("ApplyRetries = %d, %v, want 1", n, err)
	}
	if st, v := drivertest.ViewOf(t, s, "order-c"); st != "shipped" || v != 3 {
		t.Fatalf("order-c is %s v%d, want shipped v3 (c2 retried, c3 drained)", st, v)
	}
	if st, _ := drivertest.ViewOf(t, s, "order-d"); st != "" {
		t.Fatalf("a skipped event applied: order-d is %s", st)
	}
	// The retried message is in the inbox: a copy is a duplicate.
	drivertest.HandleWant(t, c, drivertest.OrderEvent("c2", "order-c", 2, "order.teleported"), projection.Duplicate)
	open, err := projection.Quarantine(s).Open(ctx, "orders")
	if err != nil || len(open) != 0 {
		t.Fatalf("open entries %+v (%v)", open, err)
	}
	if _, err := projection.Quarantine(s).Open(ctx, "nobody"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Quarantine.Open of an unknown name: %v", err)
	}
}

// TestQuarantineMessageBlamesData: when the event's data is what does not
// decode, the stop says the data is at fault and how to give it up; a
// handler failure says to fix the handler.
func TestQuarantineMessageBlamesData(t *testing.T) {
	ctx := context.Background()
	s := storetest.MustOpen(t, nil)
	res := appendN(t, s, "s", 2)
	bad := res.Events[1]
	p := countingProjection("strict", func(e envelope.Event) error {
		if e.ID != bad.ID {
			return nil
		}
		_, err := envelope.DecodeData[struct{ I string }](e) // i is a number: the data does not fit
		return err
	})
	r, err := projection.NewRunner(s, p, &projection.RunnerOptions{MaxAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.CatchUp(ctx)
	if !errors.Is(err, projection.ErrStopped) || !errors.Is(err, envelope.ErrInvalidEvent) {
		t.Fatalf("CatchUp = %v", err)
	}
	for _, want := range []string{"data is at fault", "eventlite quarantine skip strict " + bad.ID} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("message %q lacks %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "fix the handler") {
		t.Errorf("message blames the handler: %q", err)
	}
}
