package scenario_test

import (
	"context"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/eventlite/eventlite/aggregate"
	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/projection"
	"github.com/eventlite/eventlite/scenario"
	"github.com/eventlite/eventlite/store"
)

// handStore opens a new store the way a hand-written test does: a new
// file, migrated, synchronous=NORMAL.
func handStore(b *testing.B, i int) *store.Store {
	s, err := store.Open(context.Background(), filepath.Join(b.TempDir(), "hand-"+strconv.Itoa(i)+".db"), &store.Options{Synchronous: "NORMAL"})
	if err != nil {
		b.Fatal(err)
	}
	return s
}

func handAppend(b *testing.B, s *store.Store, reg *envelope.Registry, stream string, vs ...any) {
	ctx := context.Background()
	for _, v := range vs {
		typ, _ := reg.TypeOf(v)
		e, err := reg.Encode(typ, v)
		if err != nil {
			b.Fatal(err)
		}
		e.Source = "/test"
		if _, err := s.Append(ctx, "default", stream, store.Any, e); err != nil {
			b.Fatal(err)
		}
	}
}

// The aggregate scenario of TestAggregateThenEvents, with the kit and by
// hand, alternately on the same data: the scenarios per second of each
// and their ratio (x_hand above 1: the kit is faster).
func BenchmarkAggregateScenario(b *testing.B) {
	def := accountDef()
	ctx := context.Background()
	var kit, hand time.Duration
	for i := 0; b.Loop(); i++ {
		t0 := time.Now()
		scenario.Aggregate(b, def).
			Given(Opened{Owner: "alice"}, Deposited{Amount: 100}).
			When(Withdraw{Amount: 30}).
			Then(Withdrawn{Amount: 30})
		t1 := time.Now()
		s := handStore(b, i)
		h, err := aggregate.New(s, def, nil)
		if err != nil {
			b.Fatal(err)
		}
		handAppend(b, s, def.Registry, "account-1", Opened{Owner: "alice"}, Deposited{Amount: 100})
		if _, err := h.Handle(ctx, aggregate.Command{Stream: "account-1", Payload: Withdraw{Amount: 30}}); err != nil {
			b.Fatal(err)
		}
		var got []any
		for e, err := range s.ReadStream(ctx, "default", "account-1", store.ReadStreamOptions{From: 3}) {
			if err != nil {
				b.Fatal(err)
			}
			v, err := def.Registry.Decode(e)
			if err != nil {
				b.Fatal(err)
			}
			got = append(got, v)
		}
		if d := cmp.Diff([]any{Withdrawn{Amount: 30}}, got); d != "" {
			b.Fatal(d)
		}
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
		kit, hand = kit+t1.Sub(t0), hand+time.Since(t1)
	}
	report(b, kit, hand)
}

// The projection scenario of ExampleProjection (the kit applies the
// events live and again through a rebuild; the hand-written test only
// live), alternately on the same data.
func BenchmarkProjectionScenario(b *testing.B) {
	reg := registry()
	p := balances(reg)
	ctx := context.Background()
	var kit, hand time.Duration
	for i := 0; b.Loop(); i++ {
		t0 := time.Now()
		scenario.Projection(b, reg, p).
			Given(
				scenario.On("acc-1", Opened{Owner: "alice"}),
				scenario.On("acc-1", Deposited{Amount: 100}),
				scenario.On("acc-2", Opened{Owner: "bob"}),
			).
			ThenRows(`SELECT account, balance FROM balances ORDER BY account`,
				scenario.Row{"acc-1", 100}, scenario.Row{"acc-2", 0})
		t1 := time.Now()
		s := handStore(b, i)
		handAppend(b, s, reg, "acc-1", Opened{Owner: "alice"}, Deposited{Amount: 100})
		handAppend(b, s, reg, "acc-2", Opened{Owner: "bob"})
		r, err := projection.NewRunner(s, p, nil)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := r.CatchUp(ctx); err != nil {
			b.Fatal(err)
		}
		got := map[string]int64{}
		err = s.View(ctx, func(tx *store.ReadTx) error {
			rows, err := tx.QueryContext(ctx, `SELECT account, balance FROM balances ORDER BY account`)
			if err != nil {
				return err
			}
			defer rows.Close()
			for rows.Next() {
				var a string
				var v int64
				if err := rows.Scan(&a, &v); err != nil {
					return err
				}
				got[a] = v
			}
			return rows.Err()
		})
		if err != nil {
			b.Fatal(err)
		}
		if d := cmp.Diff(map[string]int64{"acc-1": 100, "acc-2": 0}, got); d != "" {
			b.Fatal(d)
		}
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
		kit, hand = kit+t1.Sub(t0), hand+time.Since(t1)
	}
	report(b, kit, hand)
}

func report(b *testing.B, kit, hand time.Duration) {
	n := float64(b.N)
	b.ReportMetric(n/kit.Seconds(), "kit_scenarios/s")
	b.ReportMetric(n/hand.Seconds(), "hand_scenarios/s")
	b.ReportMetric(hand.Seconds()/kit.Seconds(), "x_hand")
}
