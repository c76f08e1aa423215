package metrics_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/internal/inside"
	"github.com/eventlite/eventlite/internal/outboxmark"
	"github.com/eventlite/eventlite/internal/projrow"
	"github.com/eventlite/eventlite/projection"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/effect"
	"github.com/eventlite/eventlite/store/storetest"
)

// fill gives s n of each thing a scrape counts: dead letters (ten per
// parked stream), open quarantine entries, deferred events, version
// conflicts and effects.
func fill(tb testing.TB, s *store.Store, n int) {
	tb.Helper()
	ctx := context.Background()
	var failures []outboxmark.Failure
	for i := 0; i < n; i += 10 {
		evs := make([]envelope.Event, min(10, n-i))
		for j := range evs {
			e, err := envelope.New("t", map[string]int{"i": i + j})
			if err != nil {
				tb.Fatal(err)
			}
			e.Source = "/test"
			evs[j] = e
		}
		res, err := s.Append(ctx, "default", fmt.Sprintf("s-%d", i), store.Any, evs...)
		if err != nil {
			tb.Fatal(err)
		}
		for p := res.FirstPosition(); p <= res.LastPosition(); p++ {
			failures = append(failures, outboxmark.Failure{Position: p, Error: "message too large"})
		}
	}
	l, err := store.Inner(inside.Key{}, s).AcquireLease(ctx, "relay", "earlier-relay", time.Minute)
	if err != nil {
		tb.Fatal(err)
	}
	err = s.Update(ctx, func(tx *store.Tx) error {
		if err := store.Bookkeeping(inside.Key{}, tx).DeadLetter(ctx, l, failures); err != nil {
			return err
		}
		for i := range n {
			if err := store.Bookkeeping(inside.Key{}, tx).Quarantine(ctx, projrow.Quarantined{Consumer: "c", Reason: string(projection.ReasonUninterpretable),
				EventID: fmt.Sprintf("q%d", i), Event: []byte(`{"some":"evidence"}`)}); err != nil {
				return err
			}
			if _, _, err := store.Bookkeeping(inside.Key{}, tx).Defer(ctx, inside.Deferred{Consumer: "c", Tenant: "default", Subject: fmt.Sprintf("o-%d", i), Version: 3,
				EventID: fmt.Sprintf("e%d", i), Event: []byte(`{"some":"event"}`), Expected: 2, FirstSeen: time.Now(), Reason: "gap"}); err != nil {
				return err
			}
			if err := store.Bookkeeping(inside.Key{}, tx).RecordConflict(ctx, inside.Conflict{Consumer: "c", Tenant: "default", Subject: fmt.Sprintf("o-%d", i), Version: 2,
				KeptEventID: "a", ConflictingID: "b", ConflictingEvent: []byte(`{"some":"event"}`)}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	if err := store.Inner(inside.Key{}, s).ReleaseLease(ctx, l); err != nil {
		tb.Fatal(err)
	}
	// Effects: eight callers at once, so their commits are grouped.
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := w; i < n; i += 8 {
				if _, _, err := effect.Steps(inside.Key{}, effect.For(s)).Reserve(ctx, "default", fmt.Sprintf("effect:%d", i)); err != nil {
					tb.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
}

// scrapeRegistry is a registry holding only s's collector.
func scrapeRegistry(tb testing.TB, s *store.Store) *prometheus.Registry {
	tb.Helper()
	reg := prometheus.NewRegistry()
	mustRegister(tb, reg, s, nil)
	return reg
}

// A scrape allocates about as much with 2,000 (500 with -short) dead
// letters, quarantined and deferred events, conflicts and effects as with
// 10: it counts rows, it does not list them. (Allocations, not time: they do not drift with the
// machine's load.)
func TestScrapeDoesNotGrow(t *testing.T) {
	// Not parallel: AllocsPerRun counts every goroutine's allocations.
	large := 2000
	if testing.Short() {
		large = 500
	}
	allocs := map[int]float64{}
	for _, n := range []int{10, large} {
		s := storetest.MustOpen(t, nil)
		fill(t, s, n)
		reg := scrapeRegistry(t, s)
		got := map[string]float64{}
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			for _, m := range mf.GetMetric() {
				if len(m.GetLabel()) == 0 {
					got[mf.GetName()] = m.GetGauge().GetValue()
				}
			}
		}
		for _, name := range []string{"eventlite_outbox_dead_letters", "eventlite_quarantined_events", "eventlite_deferred_events", "eventlite_version_conflicts"} {
			if got[name] != float64(n) {
				t.Errorf("%d rows: %s = %v", n, name, got[name])
			}
		}
		allocs[n] = testing.AllocsPerRun(5, func() {
			if _, err := reg.Gather(); err != nil {
				t.Fatal(err)
			}
		})
	}
	t.Logf("allocations per scrape: %v", allocs)
	// The slack covers the store's background work (its commit poller
	// allocates too) and the runtime's; listing the rows, as scrapes did
	// before, allocated a hundred times more at 2,000 rows.
	if allocs[large] > 2*allocs[10] {
		t.Errorf("a scrape allocates %.0f times with %d rows of each kind, %.0f with 10: it grows with the rows", allocs[large], large, allocs[10])
	}
}

// BenchmarkScrape scrapes a store with 10 of each thing and one with
// 10,000 in the same run, and reports the time of the second as a
// multiple of the first (x_10rows).
func BenchmarkScrape(b *testing.B) {
	small, large := storetest.MustOpen(b, nil), storetest.MustOpen(b, nil)
	fill(b, small, 10)
	fill(b, large, 10_000)
	regSmall, regLarge := scrapeRegistry(b, small), scrapeRegistry(b, large)
	var tSmall, tLarge time.Duration
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		if _, err := regSmall.Gather(); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if _, err := regLarge.Gather(); err != nil {
			b.Fatal(err)
		}
		tSmall, tLarge = tSmall+t1.Sub(t0), tLarge+time.Since(t1)
	}
	b.ReportMetric(float64(tLarge)/float64(tSmall), "x_10rows")
	b.ReportMetric(float64(tLarge.Microseconds())/float64(b.N), "us/scrape_10k")
}
