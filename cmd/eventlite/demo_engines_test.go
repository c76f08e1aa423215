package main

import (
	"context"
	"io"
	"math/rand/v2"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/eventlite/eventlite/aggregate"
	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/projection"
	"github.com/eventlite/eventlite/store"
)

// The demo's projections run unchanged on both engines: its orders,
// appended by the demo's own steps, are delivered to its shipping
// consumer (demo_shipping, handler SQL with ? placeholders and an
// aliased upsert) shuffled and with duplicates as the demo delivers
// them, and the read model says what the demo prints; delivered again,
// every event is a duplicate and the read model is unchanged. The
// catalog is replayed by the demo's replay step (a rebuild from
// scratch). With EVENTLITE_TEST_POSTGRES, on PostgreSQL too.
func TestDemoProjectionsBothEngines(t *testing.T) {
	for _, eng := range []string{"sqlite", "postgres"} {
		t.Run(eng, func(t *testing.T) {
			addr := t.TempDir() + "/demo.db"
			if eng == "postgres" {
				addr, _ = postgresDB(t)
			}
			ctx := context.Background()
			s, err := store.Open(ctx, addr, nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = s.Close() })
			d := &demo{c: &cli{log: hclog.NewNullLogger()}, out: io.Discard, path: addr, s: s}
			orders, err := aggregate.New(d.s, demoOrders(), nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, step := range []func(context.Context, *aggregate.Handler[demoOrder]) error{d.appendOrders, d.conflict, d.retry, d.compensate} {
				if err := step(ctx, orders); err != nil {
					t.Fatal(err)
				}
			}
			var msgs []envelope.Event
			for e, err := range s.ReadAll(ctx, store.ReadAllOptions{}) {
				if err != nil {
					t.Fatal(err)
				}
				msgs = append(msgs, e)
			}
			if len(msgs) != 6 {
				t.Fatalf("the demo's steps appended %d events, want 6", len(msgs))
			}
			var deliveries []envelope.Event
			for i, e := range msgs {
				deliveries = append(deliveries, e)
				if i%2 == 0 {
					deliveries = append(deliveries, e)
				}
			}
			rand.New(rand.NewPCG(7, 7)).Shuffle(len(deliveries), func(i, j int) { deliveries[i], deliveries[j] = deliveries[j], deliveries[i] })
			shipping, err := d.shippingConsumer(ctx)
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]string{"order-1": "cancelled: do not ship (version 4)", "order-2": "paid: ship it (version 2)"}
			check := func(when string) {
				t.Helper()
				for o, w := range want {
					got, err := d.shippingStatus(ctx, o)
					if err != nil || got != w {
						t.Errorf("%s, shipping's view of %s: %q, %v; want %q", when, o, got, err, w)
					}
				}
			}
			counts := map[projection.Outcome]int{}
			for _, e := range deliveries {
				res, err := shipping.Handle(ctx, e)
				if err != nil {
					t.Fatal(err)
				}
				counts[res.Outcome]++
			}
			if counts[projection.Duplicate] != 3 || counts[projection.Deferred] == 0 {
				t.Errorf("outcomes %v: want 3 duplicates and some deferred", counts)
			}
			check("after the deliveries")
			for _, e := range msgs {
				res, err := shipping.Handle(ctx, e)
				if err != nil || res.Outcome != projection.Duplicate {
					t.Fatalf("delivered again, %s v%d: %v, %v", e.Stream, e.StreamVersion, res.Outcome, err)
				}
			}
			check("delivered again")
			if cs, err := shipping.Stats(ctx); err != nil || cs.Deferred != 0 {
				t.Errorf("consumer stats %+v, %v: want none still deferred", cs, err)
			}
			if err := d.replay(ctx); err != nil {
				t.Fatalf("the demo's replay of the catalog: %v", err)
			}
		})
	}
}
