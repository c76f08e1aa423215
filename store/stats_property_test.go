package store_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/lifecycle"
	"github.com/eventlite/eventlite/store/storetest"
)

// TestStatsKeptCountsProperty: Inventory.Stats keeps each tenant's
// counts and adds what was appended since (issue 37). After every step
// of a random sequence of appends (to new, live, soft-deleted and
// hard-deleted streams), soft and hard deletes, truncates, retention
// policies and scavenges, on both engines, Stats of every tenant and of
// all of them equals a fresh full count. EVENTLITE_SEED replays a
// sequence (the seed is printed); EVENTLITE_PROPERTY_STEPS sets its
// length.
func TestStatsKeptCountsProperty(t *testing.T) {
	seed, steps := propertySeed(t, 400, 80)
	engines := []struct {
		name string
		addr func(t *testing.T) string
	}{
		{"sqlite", func(t *testing.T) string { return filepath.Join(t.TempDir(), "s.db") }},
		{"postgres", func(t *testing.T) string { return storetest.PostgresSchema(t, storetest.PostgresBase(t)) }},
	}
	for _, eng := range engines {
		t.Run(eng.name, func(t *testing.T) {
			for run := range propertyRuns() {
				sd := seed + uint64(run)
				t.Run(fmt.Sprintf("seed=%d", sd), func(t *testing.T) {
					t.Logf("replay with EVENTLITE_SEED=%d EVENTLITE_PROPERTY_STEPS=%d", sd, steps)
					statsProperty(t, eng.addr(t), sd, steps)
				})
			}
		})
	}
}

func statsProperty(t *testing.T, addr string, seed uint64, steps int) {
	ctx := context.Background()
	rnd := rand.New(rand.NewPCG(seed, seed^0x37))
	// A clock that moves a random few seconds a step, so that the last
	// minute's count both grows and drops.
	now := time.Unix(1_700_000_000, 0)
	s := storetest.MustOpenPath(t, addr, &store.Options{Now: func() time.Time { return now }})
	tenants := []string{"acme", "globex", "initech"}
	done := map[string]int{}
	var removed int64
	ev := func(typ string) envelope.Event {
		e, err := envelope.New(typ, map[string]int{"n": rnd.IntN(100)})
		if err != nil {
			t.Fatal(err)
		}
		e.Source = "/stats-property"
		return e
	}
	for step := range steps {
		now = now.Add(time.Duration(rnd.IntN(15)) * time.Second)
		tenant := tenants[rnd.IntN(len(tenants))]
		stream := fmt.Sprintf("s-%d", rnd.IntN(8))
		var op string
		var err error
		switch r := rnd.IntN(100); {
		case r < 60:
			op = "append"
			evs := make([]envelope.Event, 1+rnd.IntN(4))
			for i := range evs {
				evs[i] = ev("thing.happened")
			}
			_, err = s.Append(ctx, tenant, stream, store.Any, evs...)
		case r < 68:
			op = "delete"
			_, err = lifecycle.For(s).Delete(ctx, tenant, stream, lifecycle.DeleteOptions{})
		case r < 71:
			op = "hard-delete"
			_, err = lifecycle.For(s).Delete(ctx, tenant, stream, lifecycle.DeleteOptions{Hard: true})
		case r < 82:
			op = "truncate"
			// Often past the stream's version or before its reads'
			// start: those are refused (an InvalidError).
			_, err = lifecycle.For(s).Truncate(ctx, tenant, stream, 2+rnd.Int64N(12), store.Any)
		case r < 85:
			op = "retention"
			err = lifecycle.For(s).SetRetention(ctx, lifecycle.RetentionPolicy{Prefix: stream, MaxCount: 1 + rnd.Int64N(3)})
		default:
			op = "scavenge"
			storetest.PublishAll(t, s) // the outbox's watermark holds back what the relay did not settle
			var res lifecycle.ScavengeResult
			res, err = lifecycle.For(s).Scavenge(ctx, lifecycle.ScavengeOptions{BatchSize: 1 + rnd.IntN(20)})
			removed += res.Removed
		}
		if err != nil && !expectedStatsOpErr(op, err) {
			t.Fatalf("step %d: %s %s/%s: %v", step, op, tenant, stream, err)
		}
		if err == nil {
			done[op]++
		}
		for _, tn := range append([]string{""}, tenants...) {
			got, err := s.Inventory().Stats(ctx, tn)
			if err != nil {
				t.Fatalf("step %d (%s): stats %q: %v", step, op, tn, err)
			}
			want, err := store.FullStats(ctx, s, tn)
			if err != nil {
				t.Fatal(err)
			}
			if g := [4]int64{got.Events, got.Streams, got.LastPosition, got.AppendedLastMinute}; g != want {
				t.Fatalf("step %d (%s %s/%s): tenant %q: kept counts [events streams last recent] %v, a full count %v",
					step, op, tenant, stream, tn, g, want)
			}
		}
	}
	t.Logf("steps done: %v; events scavenged: %d", done, removed)
	if removed == 0 && steps >= 50 {
		t.Error("no scavenge removed an event: the sequence never tested a removal")
	}
}

// expectedStatsOpErr: the refusals a random step of op meets: an append
// to a hard-deleted stream; a delete or truncate of a stream that does
// not exist or is deleted; a truncate past the stream's version or
// before its reads' start.
func expectedStatsOpErr(op string, err error) bool {
	var inv *envelope.InvalidError
	switch op {
	case "append":
		return errors.Is(err, store.ErrStreamDeleted)
	case "delete", "hard-delete":
		return errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrStreamDeleted)
	case "truncate":
		return errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrStreamDeleted) || errors.As(err, &inv)
	}
	return false
}

// TestStatsGenerationAppendsMoveNothing: appends (creating streams,
// adding to them, in one and in several transactions) move no stats
// generation, so the kept counts add them at the next Stats; a delete, a
// truncate and a scavenge move it, on both engines.
func TestStatsGenerationAppendsMoveNothing(t *testing.T) {
	for _, eng := range []string{"sqlite", "postgres"} {
		t.Run(eng, func(t *testing.T) {
			addr := filepath.Join(t.TempDir(), "s.db")
			if eng == "postgres" {
				addr = storetest.PostgresSchema(t, storetest.PostgresBase(t))
			}
			ctx := context.Background()
			s := storetest.MustOpenPath(t, addr, nil)
			ev := func() envelope.Event { return envelope.Event{Source: "/t", Type: "t.happened", Data: []byte(`{}`)} }
			gen := func() int64 {
				t.Helper()
				if _, err := s.Inventory().Stats(ctx, "acme"); err != nil {
					t.Fatal(err)
				}
				g, ok := store.StatsKept(s, "acme")
				if !ok {
					t.Fatal("no kept counts after Stats")
				}
				return g
			}
			g0 := gen()
			for i := range 20 {
				if _, err := s.Append(ctx, "acme", fmt.Sprintf("s-%d", i%5), store.Any, ev(), ev()); err != nil {
					t.Fatal(err)
				}
			}
			if g := gen(); g != g0 {
				t.Fatalf("appends moved the stats generation from %d to %d", g0, g)
			}
			for _, op := range []struct {
				name string
				do   func() error
			}{
				{"truncate", func() error {
					_, err := lifecycle.For(s).Truncate(ctx, "acme", "s-0", 3, store.Any)
					return err
				}},
				{"delete", func() error {
					_, err := lifecycle.For(s).Delete(ctx, "acme", "s-1", lifecycle.DeleteOptions{})
					return err
				}},
				{"revive", func() error {
					_, err := s.Append(ctx, "acme", "s-1", store.Any, ev())
					return err
				}},
				{"scavenge", func() error {
					storetest.PublishAll(t, s)
					res, err := lifecycle.For(s).Scavenge(ctx, lifecycle.ScavengeOptions{})
					if err == nil && res.Removed == 0 {
						return errors.New("removed nothing")
					}
					return err
				}},
			} {
				before := gen()
				if err := op.do(); err != nil {
					t.Fatalf("%s: %v", op.name, err)
				}
				if g := gen(); g == before {
					t.Errorf("%s left the stats generation at %d", op.name, g)
				}
			}
		})
	}
}
