package projection_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
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

// catalogTypes include types that would break SQL or a JSON path built
// from them: the catalog keeps them as values.
var catalogTypes = []string{"order.placed", "order.paid", `it's "quoted"`, "$.items[0]", "a\\b", "größe.geändert", "x;DROP TABLE catalog"}

// appendRandomLog appends n events over a few tenants and streams, with
// random types and times, in random batches, and returns them as stored.
func appendRandomLog(t *testing.T, s *store.Store, rng *rand.Rand, n int) []envelope.Event {
	t.Helper()
	ctx := context.Background()
	base := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	for written := 0; written < n; {
		k := min(1+rng.IntN(5), n-written)
		tenant := []string{"default", "acme", "globex"}[rng.IntN(3)]
		stream := fmt.Sprintf("s-%d", rng.IntN(12))
		evs := make([]envelope.Event, k)
		for i := range evs {
			e, err := envelope.New(catalogTypes[rng.IntN(len(catalogTypes))], map[string]int{"i": written + i})
			if err != nil {
				t.Fatal(err)
			}
			e.Source = "/test"
			e.Time = base.Add(time.Duration(rng.IntN(1_000_000)) * time.Millisecond)
			evs[i] = e
		}
		if _, err := s.Append(ctx, tenant, stream, store.Any, evs...); err != nil {
			t.Fatal(err)
		}
		written += k
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

// foldCatalog is the catalog computed straight from the log.
func foldCatalog(events []envelope.Event) []projection.CatalogEntry {
	byKey := map[string]*projection.CatalogEntry{}
	var keys []string
	for _, e := range events {
		k := e.Tenant + "\x00" + e.Stream
		c := byKey[k]
		if c == nil {
			c = &projection.CatalogEntry{Tenant: e.Tenant, Stream: e.Stream, EventsByType: map[string]int64{}, FirstTime: e.Time}
			byKey[k] = c
			keys = append(keys, k)
		}
		c.Version, c.LastTime = e.StreamVersion, e.Time
		c.EventsByType[e.Type]++
	}
	out := make([]projection.CatalogEntry, 0, len(keys))
	for _, k := range keys {
		out = append(out, *byKey[k])
	}
	return out
}

func sortedCatalog(entries []projection.CatalogEntry) []projection.CatalogEntry {
	m := map[string]projection.CatalogEntry{}
	var keys []string
	for _, e := range entries {
		k := e.Tenant + "\x00" + e.Stream
		m[k] = e
		keys = append(keys, k)
	}
	out := make([]projection.CatalogEntry, 0, len(keys))
	// Tenant then stream, as ReadCatalog orders them (SQLite compares
	// TEXT bytewise, as Go compares strings).
	slices.Sort(keys)
	for _, k := range keys {
		out = append(out, m[k])
	}
	return out
}

func readCatalog(t *testing.T, s *store.Store, tenant string) []projection.CatalogEntry {
	t.Helper()
	var got []projection.CatalogEntry
	if err := projection.ReadCatalog(context.Background(), s, tenant, func(e projection.CatalogEntry) error {
		got = append(got, e)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return got
}

// TestCatalog: the catalog a runner keeps equals the one folded straight
// from a random log, hostile event types included.
func TestCatalog(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 6))
	ctx := context.Background()
	s := storetest.MustOpen(t, nil)
	if got := readCatalog(t, s, ""); len(got) != 0 {
		t.Fatalf("a catalog that never ran: %+v", got)
	}
	events := appendRandomLog(t, s, rng, 400)
	r, err := projection.NewRunner(s, projection.Catalog(), &projection.RunnerOptions{BatchSize: 1 + rng.IntN(100)})
	if err != nil {
		t.Fatal(err)
	}
	if cp, err := r.CatchUp(ctx); err != nil || cp != events[len(events)-1].Position {
		t.Fatalf("CatchUp = %d, %v", cp, err)
	}
	want := sortedCatalog(foldCatalog(events))
	if diff := cmp.Diff(want, readCatalog(t, s, "")); diff != "" {
		t.Errorf("catalog (-want +got)\n%s", diff)
	}
	var acme []projection.CatalogEntry
	for _, e := range want {
		if e.Tenant == "acme" {
			acme = append(acme, e)
		}
	}
	if diff := cmp.Diff(acme, readCatalog(t, s, "acme")); diff != "" {
		t.Errorf("one tenant's catalog (-want +got)\n%s", diff)
	}
}

// TestCatalogApplyBatchMatchesApply: the catalog's ApplyBatch, fed the
// log in random batches, leaves exactly the tables Apply leaves event by
// event.
func TestCatalogApplyBatchMatchesApply(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 7))
	ctx := context.Background()
	s := storetest.MustOpen(t, nil)
	events := appendRandomLog(t, s, rng, 500)
	p := projection.Catalog()
	one := map[string]string{"catalog": "one_catalog"}
	batch := map[string]string{"catalog": "batch_catalog"}
	err := s.Update(ctx, func(tx *store.Tx) error {
		if err := p.CreateTables(ctx, s, tx, one); err != nil {
			return err
		}
		if err := p.CreateTables(ctx, s, tx, batch); err != nil {
			return err
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
		for _, tbl := range []string{"catalog"} {
			d, err := store.Bookkeeping(inside.Key{}, tx).CompareTables(ctx, one[tbl], batch[tbl])
			if err != nil {
				return err
			}
			if d.Total() != 0 || d.SchemaDiffers {
				t.Errorf("%s: ApplyBatch differs from Apply: %+v", tbl, d)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestCatalogPostgres: on PostgreSQL, the catalog a runner keeps equals
// the one folded straight from a random log, hostile event types
// included; ApplyBatch leaves exactly the table Apply leaves; a deleted
// stream's row goes. It runs when EVENTLITE_TEST_POSTGRES is set.
func TestCatalogPostgres(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 8))
	ctx := context.Background()
	s := openPostgres(t)
	if got := readCatalog(t, s, ""); len(got) != 0 {
		t.Fatalf("a catalog that never ran: %+v", got)
	}
	events := appendRandomLog(t, s, rng, 300)
	want := sortedCatalog(foldCatalog(events))
	p := projection.Catalog()
	one := map[string]string{"catalog": "one_catalog"}
	batch := map[string]string{"catalog": "batch_catalog"}
	if err := s.Update(ctx, func(tx *store.Tx) error {
		if err := p.CreateTables(ctx, s, tx, one); err != nil {
			return err
		}
		if err := p.CreateTables(ctx, s, tx, batch); err != nil {
			return err
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
		// The comparison sees one changed row.
		if _, err := tx.ExecContext(ctx, `UPDATE `+one["catalog"]+` SET version = version + 1 WHERE tenant = $1 AND stream = $2`,
			want[0].Tenant, want[0].Stream); err != nil {
			return err
		}
		if d, err := store.Bookkeeping(inside.Key{}, tx).CompareTables(ctx, one["catalog"], batch["catalog"]); err != nil || d != (store.TableDiff{Different: 1}) {
			t.Errorf("after one row changed: %+v, %v; want one different", d, err)
		}
		// The batch table becomes the live one, as a rebuild swaps it in.
		return store.Bookkeeping(inside.Key{}, tx).RenameTable(ctx, batch["catalog"], "catalog")
	}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, readCatalog(t, s, "")); diff != "" {
		t.Errorf("catalog (-want +got)\n%s", diff)
	}
	var acme []projection.CatalogEntry
	for _, e := range want {
		if e.Tenant == "acme" {
			acme = append(acme, e)
		}
	}
	if diff := cmp.Diff(acme, readCatalog(t, s, "acme")); diff != "" {
		t.Errorf("one tenant's catalog (-want +got)\n%s", diff)
	}
	gone := want[0]
	del := envelope.Event{Type: lifecycle.TypeStreamDeleted, Tenant: gone.Tenant, Stream: gone.Stream, StreamVersion: gone.Version + 1}
	if err := s.Update(ctx, func(tx *store.Tx) error {
		return p.ApplyTx(ctx, tx, map[string]string{"catalog": "catalog"}, del)
	}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want[1:], readCatalog(t, s, "")); diff != "" {
		t.Errorf("catalog after a stream's deletion (-want +got)\n%s", diff)
	}

	// The runner keeps its own table from the same log.
	s2 := openPostgres(t)
	events = appendRandomLog(t, s2, rng, 200)
	r, err := projection.NewRunner(s2, projection.Catalog(), &projection.RunnerOptions{BatchSize: 1 + rng.IntN(100)})
	if err != nil {
		t.Fatal(err)
	}
	if cp, err := r.CatchUp(ctx); err != nil || cp != events[len(events)-1].Position {
		t.Fatalf("CatchUp = %d, %v", cp, err)
	}
	if diff := cmp.Diff(sortedCatalog(foldCatalog(events)), readCatalog(t, s2, "")); diff != "" {
		t.Errorf("the runner's catalog (-want +got)\n%s", diff)
	}
}
