package projection_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/internal/inside"
	"github.com/eventlite/eventlite/projection"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/lifecycle"
	"github.com/eventlite/eventlite/store/storetest"
)

// appendLifecycleLog appends random events and, between them, random
// truncates, soft deletes (whose streams later appends revive) and hard
// deletes, and returns the whole log.
func appendLifecycleLog(t *testing.T, s *store.Store, rng *rand.Rand, ops int) []envelope.Event {
	t.Helper()
	ctx := context.Background()
	base := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	hard := map[string]bool{}
	for op := range ops {
		tenant := []string{"default", "acme"}[rng.IntN(2)]
		stream := fmt.Sprintf("s-%d", rng.IntN(8))
		if hard[tenant+"/"+stream] {
			continue
		}
		switch k := rng.IntN(20); {
		case k < 14:
			evs := make([]envelope.Event, 1+rng.IntN(4))
			for i := range evs {
				e, err := envelope.New(catalogTypes[rng.IntN(len(catalogTypes))], map[string]int{"op": op})
				if err != nil {
					t.Fatal(err)
				}
				e.Source, e.Time = "/test", base.Add(time.Duration(rng.IntN(1_000_000))*time.Millisecond)
				evs[i] = e
			}
			if _, err := s.Append(ctx, tenant, stream, store.Any, evs...); err != nil {
				t.Fatal(err)
			}
		case k < 17:
			// Truncate before a version from the first retained one to
			// the newest.
			var first, v int64
			for si, err := range s.Streams(ctx, tenant, store.StreamsOptions{Prefix: stream, Limit: 1}) {
				if err != nil {
					t.Fatal(err)
				}
				if si.Stream == stream {
					v = si.Version
				}
			}
			for e, err := range s.ReadStream(ctx, tenant, stream, store.ReadStreamOptions{Limit: 1}) {
				if err == nil {
					first = e.StreamVersion
				}
			}
			first = max(first, 2)
			if v < first {
				continue
			}
			if _, err := lifecycle.For(s).Truncate(ctx, tenant, stream, first+rng.Int64N(v-first+1), store.Any); err != nil {
				t.Fatal(err)
			}
		default:
			h := k == 19
			_, err := lifecycle.For(s).Delete(ctx, tenant, stream, lifecycle.DeleteOptions{Hard: h, Reason: "test"})
			if errors.Is(err, store.ErrNotFound) {
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			hard[tenant+"/"+stream] = h
		}
	}
	var out []envelope.Event
	for e, err := range s.ReadAll(ctx, store.ReadAllOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, e)
	}
	return out
}

// retainedCatalog is the catalog folded from what the store's stream
// reads show: the listed streams, each from its first retained version.
func retainedCatalog(t *testing.T, s *store.Store) []projection.CatalogEntry {
	t.Helper()
	ctx := context.Background()
	var evs []envelope.Event
	for _, tenant := range []string{"acme", "default"} {
		for si, err := range s.Streams(ctx, tenant) {
			if err != nil {
				t.Fatal(err)
			}
			for e, err := range s.ReadStream(ctx, tenant, si.Stream, store.ReadStreamOptions{}) {
				if err != nil {
					t.Fatal(err)
				}
				evs = append(evs, e)
			}
		}
	}
	return sortedCatalog(foldCatalog(evs))
}

// TestCatalogLifecycle: with deletes and truncates in the log, the
// catalog a runner keeps (in random batches) equals the one folded from
// what the streams retain, and ApplyBatch leaves what Apply leaves.
func TestCatalogLifecycle(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 17))
	ctx := context.Background()
	s := storetest.MustOpen(t, nil)
	events := appendLifecycleLog(t, s, rng, 300)
	r, err := projection.NewRunner(s, projection.Catalog(), &projection.RunnerOptions{BatchSize: 1 + rng.IntN(50)})
	if err != nil {
		t.Fatal(err)
	}
	if cp, err := r.CatchUp(ctx); err != nil || cp != events[len(events)-1].Position {
		t.Fatalf("CatchUp = %d, %v", cp, err)
	}
	if diff := cmp.Diff(retainedCatalog(t, s), readCatalog(t, s, "")); diff != "" {
		t.Errorf("catalog (-want +got)\n%s", diff)
	}

	p := projection.Catalog()
	one := map[string]string{"catalog": "one_catalog"}
	batch := map[string]string{"catalog": "batch_catalog"}
	err = s.Update(ctx, func(tx *store.Tx) error {
		for _, tables := range []map[string]string{one, batch} {
			if err := p.CreateTables(ctx, s, tx, tables); err != nil {
				return err
			}
		}
		for _, e := range events {
			if err := p.ApplyTx(ctx, tx, one, e); err != nil {
				return err
			}
		}
		for i := 0; i < len(events); {
			n := min(1+rng.IntN(60), len(events)-i)
			if err := p.ApplyBatchTx(ctx, tx, batch, events[i:i+n]); err != nil {
				return err
			}
			i += n
		}
		d, err := store.Bookkeeping(inside.Key{}, tx).CompareTables(ctx, one["catalog"], batch["catalog"])
		if err != nil {
			return err
		}
		if d.Total() != 0 || d.SchemaDiffers {
			t.Errorf("ApplyBatch differs from Apply: %+v", d)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
