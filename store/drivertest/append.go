package drivertest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/store"
	"github.com/google/go-cmp/cmp"
)

func testAppendExpectedVersions(t *testing.T, h Harness) {
	ctx := context.Background()
	tests := []struct {
		name     string
		existing int // events already in the stream
		expected store.Expected
		wantErr  bool
	}{
		{"any on new stream", 0, store.Any, false},
		{"any on existing stream", 2, store.Any, false},
		{"no-stream on new stream", 0, store.NoStream, false},
		{"no-stream on existing stream", 2, store.NoStream, true},
		{"exists on new stream", 0, store.StreamExists, true},
		{"exists on existing stream", 2, store.StreamExists, false},
		{"exact match", 2, store.Exact(2), false},
		{"exact behind", 2, store.Exact(1), true},
		{"exact ahead", 2, store.Exact(3), true},
		{"exact 0 is no-stream", 0, store.Exact(0), false},
		{"exact 0 on existing", 1, store.Exact(0), true},
		{"exact on new stream", 0, store.Exact(1), true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := h.Open(t, nil)
			for i := range tc.existing {
				if _, err := s.Append(ctx, "default", "order-1", store.Any, Event(t, "t", map[string]int{"i": i})); err != nil {
					t.Fatal(err)
				}
			}
			headBefore, _ := s.Head(ctx)
			res, err := s.Append(ctx, "default", "order-1", tc.expected, Event(t, "t", 1), Event(t, "t", 2))
			if tc.wantErr {
				var ce *store.ConflictError
				if !errors.As(err, &ce) || !errors.Is(err, store.ErrConflict) {
					t.Fatalf("want ConflictError, got %v", err)
				}
				if ce.Actual != int64(tc.existing) || ce.Expected != tc.expected {
					t.Errorf("conflict names expected %v actual %d, want %v and %d", ce.Expected, ce.Actual, tc.expected, tc.existing)
				}
				if store.Retryable(err) {
					t.Error("a conflict is not retryable as is")
				}
				if head, _ := s.Head(ctx); head != headBefore {
					t.Errorf("a conflict wrote: head %d -> %d", headBefore, head)
				}
				if tc.existing > 0 {
					if got := len(ReadStream(t, s, "default", "order-1")); got != tc.existing {
						t.Errorf("stream has %d events after a conflict, want %d", got, tc.existing)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("append: %v", err)
			}
			if want := int64(tc.existing + 2); res.Version != want {
				t.Errorf("version %d, want %d", res.Version, want)
			}
			if res.LastPosition() != res.FirstPosition()+1 {
				t.Errorf("positions %v not consecutive", res.Positions())
			}
			got := ReadStream(t, s, "default", "order-1")
			for i, e := range got {
				if e.StreamVersion != int64(i+1) {
					t.Errorf("event %d has version %d", i, e.StreamVersion)
				}
			}
		})
	}
}

func testConcurrentSameExpectedVersion(t *testing.T, h Harness) {
	ctx := context.Background()
	s := h.Open(t, nil)
	const writers = 16
	rounds := 50
	if testing.Short() {
		rounds = 10
	}
	for round := range rounds {
		var wg sync.WaitGroup
		var mu sync.Mutex
		wins, conflicts := 0, 0
		for w := range writers {
			wg.Go(func() {
				_, err := s.Append(ctx, "default", "hot", store.Exact(int64(round)), Event(t, "t", map[string]int{"w": w, "r": round}))
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					wins++
				case errors.Is(err, store.ErrConflict):
					conflicts++
				default:
					t.Errorf("round %d writer %d: %v", round, w, err)
				}
			})
		}
		wg.Wait()
		if wins != 1 || conflicts != writers-1 {
			t.Fatalf("round %d: %d wins, %d conflicts; want 1 and %d", round, wins, conflicts, writers-1)
		}
	}
	if got := len(ReadStream(t, s, "default", "hot")); got != rounds {
		t.Errorf("stream has %d events, want %d", got, rounds)
	}
}

func testIdempotentRetry(t *testing.T, h Harness) {
	ctx := context.Background()
	for _, exp := range []store.Expected{store.NoStream, store.Exact(0), store.Any, store.StreamExists} {
		t.Run(exp.String(), func(t *testing.T) {
			s := h.Open(t, nil)
			if exp == store.StreamExists {
				if _, err := s.Append(ctx, "default", "s", store.Any, Event(t, "first", nil)); err != nil {
					t.Fatal(err)
				}
			}
			batch := []envelope.Event{EventWithID(t, "a", "t", 1), EventWithID(t, "b", "t", 2)}
			first, err := s.Append(ctx, "default", "s", exp, batch...)
			if err != nil {
				t.Fatal(err)
			}
			headBefore, _ := s.Head(ctx)
			again, err := s.Append(ctx, "default", "s", exp, batch...)
			if err != nil {
				t.Fatalf("retry: %v", err)
			}
			if !again.Replayed {
				t.Error("the retry's result does not say Replayed")
			}
			again.Replayed = false
			if diff := cmp.Diff(first, again); diff != "" {
				t.Errorf("retry result differs (-first +retry):\n%s", diff)
			}
			if head, _ := s.Head(ctx); head != headBefore {
				t.Errorf("retry wrote: head %d -> %d", headBefore, head)
			}
		})
	}
}

func testIDReuse(t *testing.T, h Harness) {
	ctx := context.Background()
	setup := func(t *testing.T) *store.Store {
		s := h.Open(t, nil)
		if _, err := s.Append(ctx, "default", "s1", store.Any, EventWithID(t, "a", "t", 1), EventWithID(t, "b", "t", 2)); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Append(ctx, "default", "s1", store.Any, EventWithID(t, "c", "t", 3)); err != nil {
			t.Fatal(err)
		}
		return s
	}
	tests := []struct {
		name   string
		stream string
		events func(t *testing.T) []envelope.Event
		reused string // the id the error must name
	}{
		{"different data", "s1", func(t *testing.T) []envelope.Event { return []envelope.Event{EventWithID(t, "c", "t", 99)} }, "c"},
		{"different type", "s1", func(t *testing.T) []envelope.Event { return []envelope.Event{EventWithID(t, "c", "other", 3)} }, "c"},
		{"different stream", "s2", func(t *testing.T) []envelope.Event { return []envelope.Event{EventWithID(t, "c", "t", 3)} }, "c"},
		{"part of a batch is new", "s1", func(t *testing.T) []envelope.Event {
			return []envelope.Event{EventWithID(t, "c", "t", 3), EventWithID(t, "d", "t", 4)}
		}, "c"},
		{"new then stored", "s1", func(t *testing.T) []envelope.Event {
			return []envelope.Event{EventWithID(t, "d", "t", 4), EventWithID(t, "c", "t", 3)}
		}, "c"},
		{"not the newest events", "s1", func(t *testing.T) []envelope.Event {
			return []envelope.Event{EventWithID(t, "a", "t", 1), EventWithID(t, "b", "t", 2)}
		}, "a"},
		{"same id twice in one batch", "s3", func(t *testing.T) []envelope.Event {
			return []envelope.Event{EventWithID(t, "x", "t", 1), EventWithID(t, "x", "t", 1)}
		}, "x"},
	}
	for _, tc := range tests {
		for _, exp := range []store.Expected{store.Any, store.Exact(3), store.Exact(1)} {
			t.Run(fmt.Sprintf("%s/%s", tc.name, exp), func(t *testing.T) {
				s := setup(t)
				before, _ := s.Head(ctx)
				_, err := s.Append(ctx, "default", tc.stream, exp, tc.events(t)...)
				if !errors.Is(err, store.ErrDuplicate) {
					t.Fatalf("want ErrDuplicate, got %v", err)
				}
				var de *store.DuplicateError
				if !errors.As(err, &de) || de.EventID != tc.reused {
					t.Errorf("error does not name the reused id %q: %v", tc.reused, err)
				}
				if !errors.Is(err, store.ErrInvalidEvent) {
					t.Errorf("a reused id is invalid input: %v", err)
				}
				if after, _ := s.Head(ctx); after != before {
					t.Errorf("wrote: head %d -> %d", before, after)
				}
			})
		}
	}
}

// Group commit hands out consecutive, gap-free positions: concurrent
// appends (which may share a transaction, each in a scope of its own),
// some refused in the middle of a group (a duplicate id, a conflict) and
// some creating the same new stream at once, leave positions 1..n with
// no gap and no duplicate, each append's consecutive, and the versions
// of every stream increasing with its positions. Each append reads the
// last position handed out again, so it sees its group's earlier appends
// and none that was rolled back.
func testGroupCommitPositionsConsecutive(t *testing.T, h Harness) {
	ctx := context.Background()
	s := h.Open(t, nil)
	const writers, rounds = 24, 15
	var (
		mu      sync.Mutex
		results []store.AppendResult
		refused int
		created = map[string]int{} // new stream -> appends that created it
	)
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for r := range rounds {
				stream := fmt.Sprintf("w%d", w)
				expected := store.Any
				evs := make([]envelope.Event, 1+(w+r)%3)
				for i := range evs {
					evs[i] = EventWithID(t, fmt.Sprintf("w%d-r%d-%d", w, r, i), "t", i)
				}
				switch r % 5 {
				case 1: // refused: the id of this writer's first event
					evs[len(evs)-1].ID = fmt.Sprintf("w%d-r0-0", w)
				case 2: // every writer creates the same new stream at once
					stream, expected = fmt.Sprintf("shared-%d", r), store.NoStream
				case 3: // a conflict: the stream is past version 0
					expected = store.NoStream
				}
				res, err := s.Append(ctx, "acme", stream, expected, evs...)
				mu.Lock()
				switch {
				case err == nil:
					results = append(results, res)
					if r%5 == 2 {
						created[stream]++
					}
				case r%5 == 1 && errors.As(err, new(*store.DuplicateError)),
					r%5 == 2 && errors.Is(err, store.ErrConflict),
					r%5 == 3 && errors.Is(err, store.ErrConflict):
					refused++
				default:
					t.Errorf("writer %d round %d: %v", w, r, err)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	for stream, n := range created {
		if n != 1 {
			t.Errorf("%s was created by %d appends, want 1", stream, n)
		}
	}
	// Three rounds each of duplicates, of conflicts, and of creators that
	// lost the race to one winner.
	if want := 3*writers + 3*writers + 3*(writers-1); refused != want {
		t.Errorf("%d appends refused, want %d", refused, want)
	}
	slices.SortFunc(results, func(a, b store.AppendResult) int { return int(a.FirstPosition() - b.FirstPosition()) })
	next := int64(1)
	lastVersion := map[string]int64{}
	for _, res := range results {
		for i, e := range res.Events {
			if e.Position != next {
				t.Fatalf("%s: event %d at position %d, want %d (positions so far 1..%d)", res.Stream, i, e.Position, next, next-1)
			}
			if e.StreamVersion != lastVersion[res.Stream]+1 {
				t.Fatalf("%s: position %d has version %d after version %d", res.Stream, e.Position, e.StreamVersion, lastVersion[res.Stream])
			}
			lastVersion[res.Stream] = e.StreamVersion
			next++
		}
	}
	head, err := s.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if head != next-1 {
		t.Errorf("head %d, want %d: an append the results do not know of", head, next-1)
	}
}

func testAppendReadBack(t *testing.T, h Harness) {
	ctx := context.Background()
	s := h.Open(t, nil)
	in := EventWithID(t, "e-1", "order.placed", map[string]any{"total": 42})
	in.Data = []byte("{\n  \"total\": 42\n}")
	in.CorrelationID, in.CausationID = "corr", "cause"
	in.Extensions = map[string]any{"traceparent": "00-abc", "n": int32(7), "ok": true}
	res, err := s.Append(ctx, "acme", "order-1", store.NoStream, in)
	if err != nil {
		t.Fatal(err)
	}
	got := ReadStream(t, s, "acme", "order-1")
	if len(got) != 1 {
		t.Fatalf("read %d events", len(got))
	}
	want := res.Events[0]
	if string(want.Data) != `{"total":42}` {
		t.Errorf("data not compacted: %s", want.Data)
	}
	if diff := cmp.Diff(want, got[0]); diff != "" {
		t.Errorf("read back (-appended +read):\n%s", diff)
	}
	if got[0].Tenant != "acme" || got[0].Stream != "order-1" || got[0].Position != 1 || got[0].StreamVersion != 1 {
		t.Errorf("store fields: %+v", got[0])
	}
}

func testTenantsIsolated(t *testing.T, h Harness) {
	ctx := context.Background()
	s := h.Open(t, nil)
	// The same id and stream in two tenants are two independent events.
	a, err := s.Append(ctx, "tenant-a", "s", store.NoStream, EventWithID(t, "same", "t", "a"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.Append(ctx, "tenant-b", "s", store.NoStream, EventWithID(t, "same", "t", "b"))
	if err != nil {
		t.Fatalf("same id in another tenant: %v", err)
	}
	if a.FirstPosition() == b.FirstPosition() {
		t.Error("tenants share an event")
	}
	if got := ReadStream(t, s, "tenant-a", "s"); len(got) != 1 || string(got[0].Data) != `"a"` {
		t.Errorf("tenant-a sees %v", got)
	}
	var n int
	for e, err := range s.ReadAll(ctx, store.ReadAllOptions{Tenant: "tenant-b"}) {
		if err != nil {
			t.Fatal(err)
		}
		if e.Tenant != "tenant-b" {
			t.Errorf("tenant-b read sees %s's event", e.Tenant)
		}
		n++
	}
	if n != 1 {
		t.Errorf("tenant-b read %d events", n)
	}
	if _, err := s.Append(ctx, "tenant a", "s", store.Any, Event(t, "t", 1)); !errors.Is(err, store.ErrInvalidEvent) {
		t.Errorf("bad tenant name: %v", err)
	}
}
