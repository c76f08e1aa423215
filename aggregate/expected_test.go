package aggregate_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/eventlite/eventlite/aggregate"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/storetest"
)

// countingCounter is the counter aggregate whose Decide counts its calls
// and, when meddle is set, runs it first (to append behind its back).
func countingCounter(t *testing.T, s *store.Store, calls *int, meddle func()) *aggregate.Handler[Counter] {
	t.Helper()
	def := counterDef()
	decide := def.Decide
	def.Decide = func(c Counter, cmd aggregate.Command) ([]any, error) {
		*calls++
		if meddle != nil {
			meddle()
		}
		return decide(c, cmd)
	}
	h, err := aggregate.New(s, def, nil)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// appendAdded appends one counter event to stream directly, as another
// writer would.
func appendAdded(t *testing.T, s *store.Store, stream string) {
	t.Helper()
	e, err := counterRegistry().Encode("counter.added", Added{N: 100, By: "other"})
	if err != nil {
		t.Fatal(err)
	}
	e.Source = "/test"
	if _, err := s.Append(context.Background(), "default", stream, store.Any, e); err != nil {
		t.Fatal(err)
	}
}

func TestCommandExpected(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name     string
		existing int // events in the stream before the command
		expected store.Expected
		ok       bool
	}{
		{"zero value is any, new stream", 0, store.Expected{}, true},
		{"zero value is any, existing stream", 2, store.Expected{}, true},
		{"equal", 2, store.Exact(2), true},
		{"stale", 2, store.Exact(1), false},
		{"ahead", 2, store.Exact(3), false},
		{"no-stream on a new stream", 0, store.NoStream, true},
		{"no-stream on an existing stream", 1, store.NoStream, false},
		{"exists on an existing stream", 1, store.StreamExists, true},
		{"exists on a new stream", 0, store.StreamExists, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := storetest.MustOpen(t, nil)
			for range tc.existing {
				appendAdded(t, s, "c")
			}
			calls := 0
			h := countingCounter(t, s, &calls, nil)
			res, err := h.Handle(ctx, aggregate.Command{Stream: "c", Expected: tc.expected, Payload: Add{N: 1, By: "me"}})
			if tc.ok {
				if err != nil {
					t.Fatalf("Handle: %v", err)
				}
				if res.Version != int64(tc.existing+1) || calls != 1 {
					t.Errorf("version %d after %d Decide calls; want %d after 1", res.Version, calls, tc.existing+1)
				}
				return
			}
			var ce *store.ConflictError
			if !errors.As(err, &ce) || !errors.Is(err, store.ErrConflict) {
				t.Fatalf("Handle = %v; want a *store.ConflictError", err)
			}
			want := store.ConflictError{Tenant: "default", Stream: "c", Expected: tc.expected, Actual: int64(tc.existing)}
			if diff := cmp.Diff(want, *ce, cmp.AllowUnexported(store.Expected{})); diff != "" {
				t.Errorf("conflict (-want +got):\n%s", diff)
			}
			if calls != 0 {
				t.Errorf("Decide ran %d times on a stale command", calls)
			}
			if n := streamLen(t, s, "default", "c"); n != tc.existing {
				t.Errorf("the stream has %d events; want the %d it had", n, tc.existing)
			}
		})
	}
}

// A stale command with an operation id records nothing: a retry gets the
// same conflict, and the id stays free for a command the user decided
// again on what the stream holds now.
func TestCommandExpectedWithOperationID(t *testing.T) {
	ctx := context.Background()
	s := storetest.MustOpen(t, nil)
	appendAdded(t, s, "c")
	appendAdded(t, s, "c") // the form showed version 1; the stream is at 2
	calls := 0
	h := countingCounter(t, s, &calls, nil)
	cmd := aggregate.Command{Stream: "c", OperationID: "op-1", Expected: store.Exact(1), Payload: Add{N: 5, By: "me"}}
	for try := 1; try <= 2; try++ {
		_, err := h.Handle(ctx, cmd)
		var ce *store.ConflictError
		if !errors.As(err, &ce) || ce.Actual != 2 {
			t.Fatalf("try %d: Handle = %v; want a conflict at version 2", try, err)
		}
	}
	if calls != 0 || streamLen(t, s, "default", "c") != 2 {
		t.Fatalf("Decide ran %d times, stream has %d events; want 0 and 2", calls, streamLen(t, s, "default", "c"))
	}
	if _, ok, err := s.Aggregates().Operation(ctx, "default", "op-1"); err != nil || ok {
		t.Fatalf("operation recorded = %v, %v; want nothing recorded", ok, err)
	}
	cmd.Expected = store.Exact(2)
	res, err := h.Handle(ctx, cmd)
	if err != nil || res.Version != 3 || res.Replayed {
		t.Fatalf("after looking again: %+v, %v; want version 3, carried out now", res, err)
	}
	// Now recorded: a retry returns the first result, Expected or not.
	again, err := h.Handle(ctx, cmd)
	if err != nil || !again.Replayed || again.Version != 3 {
		t.Fatalf("retry: %+v, %v; want the first result", again, err)
	}
}

// A writer that appends between the load and the append: with an exact
// Expected the command fails at once on its next load (Decide ran once);
// with StreamExists the expectation still holds, so it decides again.
func TestCommandExpectedRace(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name      string
		expected  store.Expected
		wantCalls int
		ok        bool
	}{
		{"exact", store.Exact(1), 1, false},
		{"exists", store.StreamExists, 2, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := storetest.MustOpen(t, nil)
			appendAdded(t, s, "c")
			calls := 0
			h := countingCounter(t, s, &calls, func() {
				if calls == 1 {
					appendAdded(t, s, "c")
				}
			})
			res, err := h.Handle(ctx, aggregate.Command{Stream: "c", Expected: tc.expected, Payload: Add{N: 1, By: "me"}})
			if calls != tc.wantCalls {
				t.Errorf("Decide ran %d times; want %d", calls, tc.wantCalls)
			}
			if tc.ok {
				if err != nil || res.Version != 3 {
					t.Fatalf("Handle = %+v, %v; want version 3", res, err)
				}
				return
			}
			var ce *store.ConflictError
			if !errors.As(err, &ce) || ce.Actual != 2 || ce.Expected != store.Exact(1) {
				t.Fatalf("Handle = %v; want expected version 1, actual 2", err)
			}
			if n := streamLen(t, s, "default", "c"); n != 2 {
				t.Errorf("stream has %d events; want 2", n)
			}
		})
	}
}

func TestResultLastPosition(t *testing.T) {
	ctx := context.Background()
	s := storetest.MustOpen(t, nil)
	reg := counterRegistry()
	def := counterDef()
	def.Decide = func(_ Counter, cmd aggregate.Command) ([]any, error) {
		n := cmd.Payload.(Add).N
		out := make([]any, n)
		for i := range out {
			out[i] = Added{N: 1, By: "me"}
		}
		return out, nil
	}
	def.Registry = reg
	h, err := aggregate.New(s, def, nil)
	if err != nil {
		t.Fatal(err)
	}
	appendAdded(t, s, "other") // position 1: the command's events come after it
	res, err := h.Handle(ctx, aggregate.Command{Stream: "c", Payload: Add{N: 3}})
	if err != nil {
		t.Fatal(err)
	}
	head, err := s.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res.LastPosition() != head || head != 4 {
		t.Errorf("LastPosition = %d, head %d; want 4", res.LastPosition(), head)
	}
	none, err := h.Handle(ctx, aggregate.Command{Stream: "c", Payload: Add{N: 0}})
	if err != nil {
		t.Fatal(err)
	}
	if none.LastPosition() != 0 || len(none.Positions) != 0 {
		t.Errorf("a command with nothing to do: LastPosition = %d; want 0", none.LastPosition())
	}
}
