package store_test

// Tests of the append path's statements: one statement checks the
// expected version and moves the streams row, events go in several to a
// statement, their outbox rows in one. What they must keep: a failed or
// retried append leaves the streams row as it was, batches of every size
// get consecutive positions, versions and one outbox row per event.

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/drivertest"
	"github.com/eventlite/eventlite/store/outbox"
	"github.com/eventlite/eventlite/store/storetest"
)

// streamInfo returns the streams row of one stream.
func streamInfo(t *testing.T, s *store.Store, tenant, stream string) store.StreamInfo {
	t.Helper()
	for si, err := range s.Streams(context.Background(), tenant) {
		if err != nil {
			t.Fatal(err)
		}
		if si.Stream == stream {
			return si
		}
	}
	t.Fatalf("no streams row for %s", stream)
	return store.StreamInfo{}
}

// tickClock is a clock that moves on a second at every call.
func tickClock() func() time.Time {
	var mu sync.Mutex
	t := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	return func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		t = t.Add(time.Second)
		return t
	}
}

// TestRetryAndConflictLeaveStreamRow: an append whose expectation fails,
// and a retry of a stored append (whose first statement already moved
// the stream on when expected was Any), write nothing: the stream's
// version and updated_at stay as the first append left them.
func TestRetryAndConflictLeaveStreamRow(t *testing.T) {
	ctx := context.Background()
	for _, exp := range []store.Expected{store.Any, store.StreamExists, store.Exact(3), store.NoStream} {
		t.Run(exp.String(), func(t *testing.T) {
			s := storetest.MustOpen(t, &store.Options{Now: tickClock()})
			if _, err := s.Append(ctx, "acme", "s", store.Any, drivertest.EventWithID(t, "x", "t", 0)); err != nil {
				t.Fatal(err)
			}
			batch := []envelope.Event{drivertest.EventWithID(t, "a", "t", 1), drivertest.EventWithID(t, "b", "t", 2)}
			first, err := s.Append(ctx, "acme", "s", store.Any, batch...)
			if err != nil {
				t.Fatal(err)
			}
			before := streamInfo(t, s, "acme", "s")
			headBefore, _ := s.Head(ctx)

			again, err := s.Append(ctx, "acme", "s", exp, batch...)
			if err != nil {
				t.Fatalf("retry with %v: %v", exp, err)
			}
			if again.Version != first.Version || again.FirstPosition() != first.FirstPosition() {
				t.Errorf("retry returned version %d at %d, want the first result: %d at %d",
					again.Version, again.FirstPosition(), first.Version, first.FirstPosition())
			}
			// A conflict: a new event with an expectation that fails
			// (Any and StreamExists hold on this stream).
			if exp != store.Any && exp != store.StreamExists {
				_, err = s.Append(ctx, "acme", "s", exp, drivertest.EventWithID(t, "new", "t", 9))
				var ce *store.ConflictError
				if exp == store.Exact(3) {
					// version 3 holds: append, then conflict on the same
					// expectation.
					if err != nil {
						t.Fatal(err)
					}
					before = streamInfo(t, s, "acme", "s")
					headBefore, _ = s.Head(ctx)
					_, err = s.Append(ctx, "acme", "s", exp, drivertest.EventWithID(t, "new2", "t", 10))
				}
				if !errors.As(err, &ce) {
					t.Fatalf("append with %v: %v, want a *ConflictError", exp, err)
				}
			}
			after := streamInfo(t, s, "acme", "s")
			if after.Version != before.Version || !after.UpdatedAt.Equal(before.UpdatedAt) {
				t.Errorf("streams row moved: version %d -> %d, updated_at %v -> %v",
					before.Version, after.Version, before.UpdatedAt, after.UpdatedAt)
			}
			if head, _ := s.Head(ctx); head != headBefore {
				t.Errorf("head %d -> %d", headBefore, head)
			}
			if v, _ := s.StreamVersion(ctx, "acme", "s"); v != before.Version {
				t.Errorf("stream version %d, want %d", v, before.Version)
			}
		})
	}
}

// TestRetryInsideUpdate: a retry through tx.Append returns the first
// result, leaves the stream's version as it was, and the closure's other
// writes commit.
func TestRetryInsideUpdate(t *testing.T) {
	ctx := context.Background()
	s := storetest.MustOpen(t, nil)
	batch := []envelope.Event{drivertest.EventWithID(t, "a", "t", 1), drivertest.EventWithID(t, "b", "t", 2)}
	first, err := s.Append(ctx, "acme", "s", store.Any, batch...)
	if err != nil {
		t.Fatal(err)
	}
	err = s.Update(ctx, func(tx *store.Tx) error {
		again, err := tx.Append(ctx, "acme", "s", store.Any, batch...)
		if err != nil {
			return err
		}
		if again.Version != first.Version {
			return fmt.Errorf("retry version %d, want %d", again.Version, first.Version)
		}
		_, err = tx.Append(ctx, "acme", "other", store.NoStream, drivertest.EventWithID(t, "c", "t", 3))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := s.StreamVersion(ctx, "acme", "s"); v != 2 {
		t.Errorf("stream s at version %d after a retry, want 2", v)
	}
	if v, _ := s.StreamVersion(ctx, "acme", "other"); v != 1 {
		t.Errorf("stream other at version %d, want 1: the closure's append did not commit", v)
	}
}

// TestRetryInGroup: retries and new appends committed in one group (the
// writer's savepoints) each get their own outcome; the retries move no
// stream.
func TestRetryInGroup(t *testing.T) {
	ctx := context.Background()
	s := storetest.MustOpen(t, nil)
	const n = 16
	batches := make([][]envelope.Event, n)
	for i := range n {
		batches[i] = []envelope.Event{drivertest.EventWithID(t, fmt.Sprintf("e%d-1", i), "t", i), drivertest.EventWithID(t, fmt.Sprintf("e%d-2", i), "t", i)}
		if i%2 == 0 { // stored once already: the group's append is a retry
			if _, err := s.Append(ctx, "acme", fmt.Sprintf("s%d", i), store.Any, batches[i]...); err != nil {
				t.Fatal(err)
			}
		}
	}
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			_, errs[i] = s.Append(ctx, "acme", fmt.Sprintf("s%d", i), store.Any, batches[i]...)
		})
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Errorf("append %d: %v", i, errs[i])
		}
		if v, _ := s.StreamVersion(ctx, "acme", fmt.Sprintf("s%d", i)); v != 2 {
			t.Errorf("stream s%d at version %d, want 2", i, v)
		}
	}
}

// TestAppendBatchSizes: batches around the size one INSERT statement
// takes get consecutive positions and versions, read back as appended,
// with one outbox row each (MustOpen's invariant check).
func TestAppendBatchSizes(t *testing.T) {
	ctx := context.Background()
	s := storetest.MustOpen(t, nil)
	sizes := []int{1, 31, 32, 33, 64, 65, 100, 2}
	if testing.Short() {
		sizes = []int{1, 32, 33, 2}
	}
	version := map[string]int64{}
	var head int64
	for i, n := range sizes {
		stream := fmt.Sprintf("s%d", i%3)
		evs := make([]envelope.Event, n)
		for j := range evs {
			evs[j] = drivertest.EventWithID(t, fmt.Sprintf("b%d-%d", i, j), "t", j)
		}
		res, err := s.Append(ctx, "acme", stream, store.Exact(version[stream]), evs...)
		if err != nil {
			t.Fatalf("batch of %d: %v", n, err)
		}
		for j, e := range res.Events {
			if e.Position != head+int64(j)+1 || e.StreamVersion != version[stream]+int64(j)+1 {
				t.Fatalf("batch of %d: event %d at position %d version %d, want %d and %d",
					n, j, e.Position, e.StreamVersion, head+int64(j)+1, version[stream]+int64(j)+1)
			}
		}
		head += int64(n)
		version[stream] += int64(n)
		if res.Version != version[stream] {
			t.Errorf("batch of %d: version %d, want %d", n, res.Version, version[stream])
		}
	}
	for stream, v := range version {
		got := drivertest.ReadStream(t, s, "acme", stream)
		if int64(len(got)) != v {
			t.Errorf("%s: read %d events, want %d", stream, len(got), v)
		}
	}
	st, err := outbox.For(s).Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Pending != head {
		t.Errorf("%d outbox rows pending, want %d", st.Pending, head)
	}
}
