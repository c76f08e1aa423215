package store

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/internal/benchdata"
	"github.com/oklog/ulid/v2"
)

// BenchmarkPrepareAppend measures what an append of 100 events does
// before its transaction (prepareAppend: the checks and fills of every
// event), on the events BenchmarkAppend appends.
func BenchmarkPrepareAppend(b *testing.B) {
	s, err := Open(context.Background(), filepath.Join(b.TempDir(), "x.db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	rng := rand.New(rand.NewPCG(1, 42))
	types := []string{"order.placed", "order.item_added", "order.paid", "order.shipped"}
	const n = 100
	evs := make([]envelope.Event, n)
	for i := range evs {
		evs[i] = envelope.Event{ID: ulid.Make().String(), Source: "/bench", Type: types[rng.IntN(len(types))],
			DataContentType: "application/json", Data: benchdata.Payload(rng, fmt.Sprintf("ord_%06d", i))}
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.prepareAppend("acme", "order-001", Any, evs); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/event")
}

// TestPrepareAppendDuplicateIDs checks prepareAppend on batches whose ids
// come in every kind of order (ascending, which proves them distinct
// without a set, then not) against a model: the first problem in event
// order, a duplicate id naming both events, or an invalid event, with the
// same error text.
func TestPrepareAppendDuplicateIDs(t *testing.T) {
	s, err := Open(context.Background(), filepath.Join(t.TempDir(), "x.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// model is what prepareAppend answers: the first event that is
	// invalid (an empty type) or repeats an earlier id.
	model := func(evs []envelope.Event) string {
		seen := map[string]int{}
		for i, e := range evs {
			if e.Type == "" {
				return fmt.Sprintf("invalid event %d: type: required and empty", i)
			}
			if j, dup := seen[e.ID]; dup {
				return (&DuplicateError{Tenant: "acme", EventID: e.ID, Reason: fmt.Sprintf("events %d and %d of one batch share it", j, i)}).Error()
			}
			seen[e.ID] = i
		}
		return ""
	}
	check := func(t *testing.T, ids []string, invalid int) {
		t.Helper()
		evs := make([]envelope.Event, len(ids))
		for i, id := range ids {
			evs[i] = envelope.Event{ID: id, Source: "/s", Type: "t"}
		}
		if invalid >= 0 {
			evs[invalid].Type = ""
		}
		want := model(evs)
		_, err := s.prepareAppend("acme", "s", Any, evs)
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != want {
			t.Fatalf("ids %q, invalid event %d: got %q, want %q", ids, invalid, got, want)
		}
	}
	fixed := [][]string{
		{"a"}, {"a", "a"}, {"a", "b"}, {"b", "a"}, {"a", "b", "a"}, {"a", "b", "b"}, {"b", "a", "b"},
		{"a", "b", "c", "a"}, {"a", "c", "b", "a"}, {"c", "b", "a"}, {"a", "c", "b", "c"},
		{"a", "b", "c", "d", "c"}, {"ab", "a", "ab"}, {"a", "ab", "a"}, {"A", "a", "A"},
		{"a", "a!", "a"}, {"a!", "a", "a!"}, {"01J9Z3K6Q8X2V4M5N7P9R1S3T0", "01J9Z3K6Q8X2V4M5N7P9R1S3T1", "01J9Z3K6Q8X2V4M5N7P9R1S3T0"},
	}
	for _, ids := range fixed {
		for invalid := -1; invalid < len(ids); invalid++ {
			check(t, ids, invalid)
		}
	}
	rng := rand.New(rand.NewPCG(5, 6))
	for range 3000 {
		n := 1 + rng.IntN(30)
		ids := make([]string, n)
		for i := range ids {
			ids[i] = fmt.Sprintf("%02d", rng.IntN(2*n))
		}
		// Often an ascending prefix, as ULIDs give, before the order
		// breaks.
		if k := rng.IntN(n + 1); rng.IntN(2) == 0 {
			slices.Sort(ids[:k])
			ids = append(ids[:0:0], ids...)
			if rng.IntN(2) == 0 {
				slices.Reverse(ids[k:])
			}
		}
		invalid := -1
		if rng.IntN(4) == 0 {
			invalid = rng.IntN(n)
		}
		check(t, ids, invalid)
	}
	// Ids left empty are filled in ascending order: a batch of them
	// passes.
	evs := make([]envelope.Event, 200)
	for i := range evs {
		evs[i] = envelope.Event{Source: "/s", Type: "t"}
	}
	if _, err := s.prepareAppend("acme", "s", Any, evs); err != nil {
		t.Fatal(err)
	}
}
