package store_test

// BenchmarkNested: an Update closure of 400 inserts, each in a scope of
// its own, every other one through tx.Nested and raw (SAVEPOINT, insert,
// RELEASE by hand, as projection did before tx.Nested), each scope timed
// on its own, so that both forms meet the same load on the same
// transaction. Medians, not sums: on a loaded machine a few scopes that
// the scheduler preempts would decide a sum. x_raw = the raw scope's
// median time / Nested's (a rate ratio). Figures in BENCHMARKS.md
// ("Nested scopes").

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/storetest"
)

func BenchmarkNested(b *testing.B) {
	ctx := context.Background()
	s := storetest.MustOpen(b, nil)
	if err := s.Update(ctx, func(tx *store.Tx) error {
		_, err := tx.ExecContext(ctx, `CREATE TABLE kv (k INTEGER PRIMARY KEY, v TEXT)`)
		return err
	}); err != nil {
		b.Fatal(err)
	}
	const scopes = 400
	next := 0
	insert := func(tx *store.Tx) error {
		next++
		_, err := tx.ExecContext(ctx, `INSERT INTO kv (k, v) VALUES (?, 'x')`, next)
		return err
	}
	raw := func(tx *store.Tx) error {
		if err := store.ExecBehind(ctx, tx, `SAVEPOINT raw_scope`); err != nil {
			return err
		}
		if err := insert(tx); err != nil {
			return err
		}
		return store.ExecBehind(ctx, tx, `RELEASE raw_scope`)
	}
	nested := func(tx *store.Tx) error {
		return tx.Nested(ctx, func() error { return insert(tx) })
	}
	var rawDur, nestedDur []time.Duration
	b.ResetTimer()
	for range b.N {
		if err := s.Update(ctx, func(tx *store.Tx) error {
			for i := range scopes {
				fn, d := raw, &rawDur
				if i%2 == 1 {
					fn, d = nested, &nestedDur
				}
				start := time.Now()
				if err := fn(tx); err != nil {
					return err
				}
				*d = append(*d, time.Since(start))
			}
			return nil
		}); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	median := func(ds []time.Duration) time.Duration {
		slices.Sort(ds)
		return ds[len(ds)/2]
	}
	r, n := median(rawDur), median(nestedDur)
	b.ReportMetric(float64(n.Nanoseconds())/1e3, "nested_p50_us")
	b.ReportMetric(float64(r.Nanoseconds())/1e3, "raw_p50_us")
	b.ReportMetric(float64(r)/float64(n), "x_raw")
}
