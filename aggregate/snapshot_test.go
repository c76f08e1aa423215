package aggregate_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/eventlite/eventlite/aggregate"
	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/storetest"
)

// TestSnapshotsEqualFullFold: for random histories, the state loaded from
// snapshots equals the state folded from every event.
func TestSnapshotsEqualFullFold(t *testing.T) {
	ctx := context.Background()
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	s := storetest.MustOpen(t, nil)
	plain := newCounter(t, s, nil)
	histories := 20
	if testing.Short() {
		histories = 6
	}
	for i := range histories {
		every := 1 + rng.IntN(10)
		def := counterDef()
		def.SnapshotEvery = every
		snapped, err := aggregate.New(s, def, nil)
		if err != nil {
			t.Fatal(err)
		}
		stream := fmt.Sprintf("h%d", i)
		commands := rng.IntN(60)
		for c := range commands {
			// Commands go through either handler: snapshots must not
			// depend on who wrote the events.
			h := snapped
			if rng.IntN(3) == 0 {
				h = plain
			}
			if _, err := h.Handle(ctx, aggregate.Command{Stream: stream, Payload: Add{N: 1 + rng.IntN(9), By: fmt.Sprint(c % 4)}}); err != nil {
				t.Fatal(err)
			}
		}
		want, wantV, err := plain.Load(ctx, "default", stream)
		if err != nil {
			t.Fatal(err)
		}
		got, gotV, err := snapped.Load(ctx, "default", stream)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" || gotV != wantV {
			t.Errorf("history %d (every %d, %d commands): version %d vs %d (-fold +snapshot):\n%s", i, every, commands, wantV, gotV, diff)
		}
	}
}

// TestSnapshotIsUsedAndSchemaChecked proves Load starts from the snapshot
// (a planted state shows through) and ignores one of another schema.
func TestSnapshotIsUsedAndSchemaChecked(t *testing.T) {
	ctx := context.Background()
	s := storetest.MustOpen(t, nil)
	def := counterDef()
	def.SnapshotEvery = 5
	h, err := aggregate.New(s, def, nil)
	if err != nil {
		t.Fatal(err)
	}
	for range 7 {
		if _, err := h.Handle(ctx, aggregate.Command{Stream: "c", Payload: Add{N: 1, By: "x"}}); err != nil {
			t.Fatal(err)
		}
	}
	snap, ok, err := s.Aggregates().LoadSnapshot(ctx, "default", "c", 1)
	if err != nil || !ok || snap.Version != 5 {
		t.Fatalf("snapshot after 7 events with every 5: %+v %v %v", snap, ok, err)
	}
	// Plant a state at version 5 that differs from the fold: Load must show it.
	planted, _ := json.Marshal(Counter{Total: 1000, Events: 5, By: map[string]int{"planted": 1000}})
	if err := s.Update(ctx, func(tx *store.Tx) error {
		return tx.SaveSnapshot(ctx, store.Snapshot{Tenant: "default", Stream: "c", SchemaVersion: 1, Version: 6, State: planted})
	}); err != nil {
		t.Fatal(err)
	}
	got, v, err := h.Load(ctx, "default", "c")
	if err != nil {
		t.Fatal(err)
	}
	if got.Total != 1001 || v != 7 {
		t.Errorf("Load did not start from the snapshot: total %d version %d", got.Total, v)
	}
	// A handler whose state schema moved on ignores schema-1 snapshots.
	def2 := def
	def2.SnapshotSchema = 2
	h2, err := aggregate.New(s, def2, nil)
	if err != nil {
		t.Fatal(err)
	}
	got2, v2, err := h2.Load(ctx, "default", "c")
	if err != nil {
		t.Fatal(err)
	}
	if got2.Total != 7 || v2 != 7 {
		t.Errorf("a snapshot of another schema was trusted: total %d version %d", got2.Total, v2)
	}
	// A snapshot that does not decode is ignored, not trusted.
	if err := s.Update(ctx, func(tx *store.Tx) error {
		return tx.SaveSnapshot(ctx, store.Snapshot{Tenant: "default", Stream: "c", SchemaVersion: 2, Version: 7, State: []byte(`{"total":"not a number"}`)})
	}); err != nil {
		t.Fatal(err)
	}
	if got3, _, err := h2.Load(ctx, "default", "c"); err != nil || got3.Total != 7 {
		t.Errorf("undecodable snapshot: %+v %v", got3, err)
	}
}

// Old-format events, stored before the payload changed shape, are upcast
// as they are read; the stored events never change.
type AddedV2 struct {
	Amount int    `json:"amount"`
	Source string `json:"source"`
}

const addedV2Schema = "https://schemas.example.com/counter-added/v2"

func TestUpcastStoredOldEvents(t *testing.T) {
	ctx := context.Background()
	s := storetest.MustOpen(t, nil)
	// Version 1 events, written by an older service.
	var old []envelope.Event
	for i := 1; i <= 3; i++ {
		e, _ := envelope.New("counter.added", Added{N: i, By: "old"})
		e.Source = "/old-service"
		old = append(old, e)
	}
	if _, err := s.Append(ctx, "default", "c", store.NoStream, old...); err != nil {
		t.Fatal(err)
	}
	var stored []envelope.Event
	for e, err := range s.ReadStream(ctx, "default", "c", store.ReadStreamOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		stored = append(stored, e)
	}

	var reg envelope.Registry
	envelope.Register[AddedV2](&reg, "counter.added", envelope.Schema(addedV2Schema))
	envelope.RegisterUpcaster(&reg, "counter.added", 1, func(e envelope.Event) (envelope.Event, error) {
		var a Added
		if err := json.Unmarshal(e.Data, &a); err != nil {
			return e, err
		}
		e.Data, _ = json.Marshal(AddedV2{Amount: a.N, Source: a.By})
		e.DataSchema = addedV2Schema
		return e, nil
	})
	h, err := aggregate.New(s, aggregate.Definition[Counter]{
		Name:     "counter",
		Registry: &reg,
		Initial:  func() Counter { return Counter{By: map[string]int{}} },
		Evolve: func(c Counter, ev aggregate.Event) Counter {
			a := ev.Payload.(AddedV2) // only the current shape reaches Evolve
			c.Total += a.Amount
			c.Events++
			c.By[a.Source] += a.Amount
			return c
		},
		Decide: func(c Counter, cmd aggregate.Command) ([]any, error) {
			return []any{AddedV2{Amount: cmd.Payload.(Add).N, Source: "new"}}, nil
		},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Handle(ctx, aggregate.Command{Stream: "c", Payload: Add{N: 10}}); err != nil {
		t.Fatal(err)
	}
	got, v, err := h.Load(ctx, "default", "c")
	if err != nil {
		t.Fatal(err)
	}
	want := Counter{Total: 16, Events: 4, By: map[string]int{"old": 6, "new": 10}}
	if diff := cmp.Diff(want, got); diff != "" || v != 4 {
		t.Errorf("version %d (-want +got):\n%s", v, diff)
	}
	var after []envelope.Event
	for e, err := range s.ReadStream(ctx, "default", "c", store.ReadStreamOptions{Limit: 3}) {
		if err != nil {
			t.Fatal(err)
		}
		after = append(after, e)
	}
	if diff := cmp.Diff(stored, after); diff != "" {
		t.Errorf("stored events changed (-before +after):\n%s", diff)
	}
	var newest envelope.Event
	for e, err := range s.ReadStream(ctx, "default", "c", store.ReadStreamOptions{Backward: true, Limit: 1}) {
		if err != nil {
			t.Fatal(err)
		}
		newest = e
	}
	if newest.DataSchema != addedV2Schema {
		t.Errorf("new events carry the current schema, got %q", newest.DataSchema)
	}

	// An event at a schema version nobody registered is an error naming it.
	future, _ := envelope.New("counter.added", map[string]int{"x": 1})
	future.Source = "/future"
	future.DataSchema = "https://schemas.example.com/counter-added/v9"
	if _, err := s.Append(ctx, "default", "f", store.NoStream, future); err != nil {
		t.Fatal(err)
	}
	if _, _, err := h.Load(ctx, "default", "f"); err == nil {
		t.Error("an unknown schema version loaded silently")
	}
}
