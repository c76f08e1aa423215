package replay_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/projection"
	"github.com/eventlite/eventlite/replay"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/storetest"
)

// TestCatalogReplayBothEngines: the built-in catalog is kept by its
// runner and replayed (a dry run without drift, a rebuild swapped in, a
// dry run again) on a SQLite file and, with EVENTLITE_TEST_POSTGRES, on a
// PostgreSQL schema.
func TestCatalogReplayBothEngines(t *testing.T) {
	for _, eng := range []struct {
		name string
		open func(t *testing.T) *store.Store
	}{
		{"sqlite", func(t *testing.T) *store.Store { return storetest.MustOpen(t, nil) }},
		{"postgres", func(t *testing.T) *store.Store {
			s, err := store.Open(context.Background(), storetest.PostgresSchema(t, storetest.PostgresBase(t)), nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				if err := s.Close(); err != nil {
					t.Error(err)
				}
			})
			return s
		}},
	} {
		t.Run(eng.name, func(t *testing.T) {
			ctx := context.Background()
			s := eng.open(t)
			n := 0
			for i, typ := range []string{"order.placed", "order.paid", "order.placed", "order.shipped", "order.placed"} {
				e, err := envelope.New(typ, map[string]int{"i": i})
				if err != nil {
					t.Fatal(err)
				}
				e.Source = "/shop"
				if _, err := s.Append(ctx, "default", fmt.Sprintf("order-%d", i%3), store.Any, e); err != nil {
					t.Fatal(err)
				}
				n++
			}
			r, err := projection.NewRunner(s, projection.Catalog(), nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := r.CatchUp(ctx); err != nil {
				t.Fatal(err)
			}
			dry := func(when string) {
				t.Helper()
				res, err := replay.Rebuild(ctx, s, projection.Catalog(), &replay.Options{DryRun: true})
				if err != nil {
					t.Fatalf("%s: dry run: %v", when, err)
				}
				if res.Drift.Total != 0 || res.Applied != int64(n) {
					t.Errorf("%s: dry run applied %d (want %d), drift %+v", when, res.Applied, n, res.Drift)
				}
			}
			dry("before the rebuild")
			res, err := replay.Rebuild(ctx, s, projection.Catalog(), nil)
			if err != nil {
				t.Fatal(err)
			}
			if !res.Swapped || res.Applied != int64(n) {
				t.Errorf("rebuild: swapped %v, applied %d, want true and %d", res.Swapped, res.Applied, n)
			}
			dry("after the rebuild")
		})
	}
}
