package store_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/drivertest"
	"github.com/eventlite/eventlite/store/erasure"
	"github.com/eventlite/eventlite/store/lifecycle"
	"github.com/eventlite/eventlite/store/storetest"
)

// A scavenge whose caller cancels after its first batch keeps that
// batch whole (events gone, ids and positions recorded), removes nothing
// more, and a later scavenge goes on where it stopped. The invariants are
// checked when the test ends (storetest).
func TestScavengeCancelledMidway(t *testing.T) {
	s := storetest.MustOpen(t, nil)
	drivertest.LifecycleFixture(t, s)
	storetest.PublishAll(t, s)
	before := drivertest.CountEvents(t, s)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	res, err := lifecycle.For(s).Scavenge(ctx, lifecycle.ScavengeOptions{BatchSize: 3, Progress: func(removed, total int64) {
		cancel() // after the first batch
	}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled scavenge: %v, want context.Canceled", err)
	}
	if res.Removed != 3 {
		t.Fatalf("cancelled scavenge removed %d, want its first batch of 3", res.Removed)
	}
	if got := drivertest.CountEvents(t, s); got != before-3 {
		t.Fatalf("%d events after the cancelled scavenge, want %d", got, before-3)
	}
	// The writer still appends, and the next scavenge removes the rest.
	drivertest.FillStream(t, s, "order-5", 1)
	storetest.PublishAll(t, s)
	if res := drivertest.Scavenge(t, s, lifecycle.ScavengeOptions{}); res.Removed != 7 {
		t.Fatalf("the scavenge after a cancelled one removed %d, want the other 7", res.Removed)
	}
	if got := drivertest.CountEvents(t, s); got != before-10+1 {
		t.Fatalf("%d events at the end, want %d", got, before-10+1)
	}
}

// A Forget whose context is cancelled before it runs destroys nothing:
// the subject's events still decrypt, and a Forget after it works.
func TestForgetCancelledDestroysNothing(t *testing.T) {
	master := drivertest.MasterKey(t, 11)
	s := storetest.MustOpenPath(t, filepath.Join(t.TempDir(), "e.db"), &store.Options{MasterKey: master})
	if _, err := s.Append(context.Background(), "default", "user-1", store.Any, drivertest.Personal(t, "alice", "alice@example.org")); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := erasure.For(s).Forget(ctx, "default", "alice"); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled forget: %v, want context.Canceled", err)
	}
	evs := drivertest.ReadStream(t, s, "default", "user-1")
	if len(evs) != 1 || envelope.Erased(evs[0]) || string(evs[0].Data) != `{"email":"alice@example.org"}` {
		t.Fatalf("after a cancelled forget: %+v, want the event decrypted", evs)
	}
	if _, err := erasure.For(s).Forget(context.Background(), "default", "alice"); err != nil {
		t.Fatal(err)
	}
	if evs := drivertest.ReadStream(t, s, "default", "user-1"); !envelope.Erased(evs[0]) {
		t.Fatalf("after forget: %+v, want erased", evs[0])
	}
}
