package store_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/storetest"
)

func ev(t testing.TB, typ string, data any) envelope.Event {
	t.Helper()
	e, err := envelope.New(typ, data)
	if err != nil {
		t.Fatal(err)
	}
	e.Source = "/test"
	return e
}

func evID(t testing.TB, id, typ string, data any) envelope.Event {
	e := ev(t, typ, data)
	e.ID = id
	return e
}

func readStream(t testing.TB, s *store.Store, tenant, stream string) []envelope.Event {
	t.Helper()
	var out []envelope.Event
	for e, err := range s.ReadStream(context.Background(), tenant, stream, store.ReadStreamOptions{}) {
		if err != nil {
			t.Fatalf("read %s: %v", stream, err)
		}
		out = append(out, e)
	}
	return out
}

func TestAppendExpectedVersions(t *testing.T) {
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
			s := storetest.MustOpen(t, nil)
			for i := range tc.existing {
				if _, err := s.Append(ctx, "default", "order-1", store.Any, ev(t, "t", map[string]int{"i": i})); err != nil {
					t.Fatal(err)
				}
			}
			headBefore, _ := s.Head(ctx)
			res, err := s.Append(ctx, "default", "order-1", tc.expected, ev(t, "t", 1), ev(t, "t", 2))
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
					if got := len(readStream(t, s, "default", "order-1")); got != tc.existing {
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
			got := readStream(t, s, "default", "order-1")
			for i, e := range got {
				if e.StreamVersion != int64(i+1) {
					t.Errorf("event %d has version %d", i, e.StreamVersion)
				}
			}
		})
	}
}

func TestAppendReadBack(t *testing.T) {
	ctx := context.Background()
	s := storetest.MustOpen(t, nil)
	in := evID(t, "e-1", "order.placed", map[string]any{"total": 42})
	in.Data = []byte("{\n  \"total\": 42\n}")
	in.CorrelationID, in.CausationID = "corr", "cause"
	in.Extensions = map[string]any{"traceparent": "00-abc", "n": int32(7), "ok": true}
	res, err := s.Append(ctx, "acme", "order-1", store.NoStream, in)
	if err != nil {
		t.Fatal(err)
	}
	got := readStream(t, s, "acme", "order-1")
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

func TestIdempotentRetry(t *testing.T) {
	ctx := context.Background()
	for _, exp := range []store.Expected{store.NoStream, store.Exact(0), store.Any, store.StreamExists} {
		t.Run(exp.String(), func(t *testing.T) {
			s := storetest.MustOpen(t, nil)
			if exp == store.StreamExists {
				if _, err := s.Append(ctx, "default", "s", store.Any, ev(t, "first", nil)); err != nil {
					t.Fatal(err)
				}
			}
			batch := []envelope.Event{evID(t, "a", "t", 1), evID(t, "b", "t", 2)}
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

func TestIDReuse(t *testing.T) {
	ctx := context.Background()
	setup := func(t *testing.T) *store.Store {
		s := storetest.MustOpen(t, nil)
		if _, err := s.Append(ctx, "default", "s1", store.Any, evID(t, "a", "t", 1), evID(t, "b", "t", 2)); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Append(ctx, "default", "s1", store.Any, evID(t, "c", "t", 3)); err != nil {
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
		{"different data", "s1", func(t *testing.T) []envelope.Event { return []envelope.Event{evID(t, "c", "t", 99)} }, "c"},
		{"different type", "s1", func(t *testing.T) []envelope.Event { return []envelope.Event{evID(t, "c", "other", 3)} }, "c"},
		{"different stream", "s2", func(t *testing.T) []envelope.Event { return []envelope.Event{evID(t, "c", "t", 3)} }, "c"},
		{"part of a batch is new", "s1", func(t *testing.T) []envelope.Event {
			return []envelope.Event{evID(t, "c", "t", 3), evID(t, "d", "t", 4)}
		}, "c"},
		{"new then stored", "s1", func(t *testing.T) []envelope.Event {
			return []envelope.Event{evID(t, "d", "t", 4), evID(t, "c", "t", 3)}
		}, "c"},
		{"not the newest events", "s1", func(t *testing.T) []envelope.Event {
			return []envelope.Event{evID(t, "a", "t", 1), evID(t, "b", "t", 2)}
		}, "a"},
		{"same id twice in one batch", "s3", func(t *testing.T) []envelope.Event {
			return []envelope.Event{evID(t, "x", "t", 1), evID(t, "x", "t", 1)}
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

func TestTenantsIsolated(t *testing.T) {
	ctx := context.Background()
	s := storetest.MustOpen(t, nil)
	// The same id and stream in two tenants are two independent events.
	a, err := s.Append(ctx, "tenant-a", "s", store.NoStream, evID(t, "same", "t", "a"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.Append(ctx, "tenant-b", "s", store.NoStream, evID(t, "same", "t", "b"))
	if err != nil {
		t.Fatalf("same id in another tenant: %v", err)
	}
	if a.FirstPosition() == b.FirstPosition() {
		t.Error("tenants share an event")
	}
	if got := readStream(t, s, "tenant-a", "s"); len(got) != 1 || string(got[0].Data) != `"a"` {
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
	if _, err := s.Append(ctx, "tenant a", "s", store.Any, ev(t, "t", 1)); !errors.Is(err, store.ErrInvalidEvent) {
		t.Errorf("bad tenant name: %v", err)
	}
}

func TestConcurrentSameExpectedVersion(t *testing.T) {
	ctx := context.Background()
	s := storetest.MustOpen(t, nil)
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
				_, err := s.Append(ctx, "default", "hot", store.Exact(int64(round)), ev(t, "t", map[string]int{"w": w, "r": round}))
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
	if got := len(readStream(t, s, "default", "hot")); got != rounds {
		t.Errorf("stream has %d events, want %d", got, rounds)
	}
}
