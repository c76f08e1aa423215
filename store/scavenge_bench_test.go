package store_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/lifecycle"
	"github.com/eventlite/eventlite/store/storetest"
)

// scavengeBenchEvents is the fixture's size: 200,000 events (20,000
// under -short), or $EVENTLITE_SCAVENGE_EVENTS (1000000 for the figure in
// BENCHMARKS.md).
func scavengeBenchEvents(b *testing.B) int {
	if v := os.Getenv("EVENTLITE_SCAVENGE_EVENTS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 200 {
			b.Fatalf("EVENTLITE_SCAVENGE_EVENTS=%q: want a number of events >= 200", v)
		}
		return n
	}
	if testing.Short() {
		return 20_000
	}
	return 200_000
}

// scavengeFixture writes n events in streams of 100 (about 250-byte JSON
// data each), the first 50 of each stream recorded two days before the
// other 50, with a one-day max-age policy on the streams and every
// outbox row published: a scavenge removes half the log.
func scavengeFixture(b *testing.B, path string, n int) {
	b.Helper()
	ctx := context.Background()
	var now atomic.Int64
	day := int64(24 * time.Hour)
	now.Store(time.Now().UnixNano() - 2*day)
	s, err := store.Open(ctx, path, &store.Options{Synchronous: "NORMAL", Now: func() time.Time { return time.Unix(0, now.Load()) }})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	data := []byte(`{"customer":"c-000000","items":[{"sku":"sku-1","qty":1,"price":1999},{"sku":"sku-2","qty":3,"price":499}],` +
		`"note":"padding to a typical event size: about two hundred and fifty bytes of JSON data in all, as the other benchmarks use"}`)
	streams := n / 100
	for half := range 2 {
		if half == 1 {
			now.Store(time.Now().UnixNano())
		}
		for i := range streams {
			evs := make([]envelope.Event, 50)
			for j := range evs {
				evs[j] = envelope.Event{Source: "/bench/scavenge", Type: "order.line_added", Data: data}
			}
			if _, err := s.Append(ctx, "default", fmt.Sprintf("s-%07d", i), store.Any, evs...); err != nil {
				b.Fatal(err)
			}
		}
	}
	// Every event published, as a relay would: the outbox's watermark
	// moves past them (an UPDATE of outbox rows no longer does since
	// appends write none).
	storetest.PublishAll(b, s)
	if b.Failed() {
		b.FailNow()
	}
	if err := lifecycle.For(s).SetRetention(ctx, lifecycle.RetentionPolicy{Prefix: "s-", MaxAge: 24 * time.Hour}); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkScavenge scavenges a log (see scavengeBenchEvents) of which
// half has expired, one scavenge per op on a fresh fixture, while one
// goroutine appends single events (synchronous FULL) to the same store;
// after each scavenge the same goroutine appends alone for as long as the
// scavenge took. Metrics: scavenge_s, removed events, removed/s,
// reclaimed_MB and file_MB (before), appends/s of the writer during the
// scavenge and alone, x_alone = during / alone (same run, alternating),
// and the writer's latencies in both phases.
func BenchmarkScavenge(b *testing.B) {
	n := scavengeBenchEvents(b)
	ctx := context.Background()
	var total time.Duration
	var removed, reclaimed, before int64
	var during, alone float64
	var latDuring, latAlone []time.Duration
	b.StopTimer()
	for i := 0; i < b.N; i++ {
		path := filepath.Join(b.TempDir(), "scavenge.db")
		scavengeFixture(b, path, n)
		s, err := store.Open(ctx, path, &store.Options{Synchronous: "FULL"})
		if err != nil {
			b.Fatal(err)
		}
		m := &appendMeter{s: s, stream: fmt.Sprintf("bench-writer-%d", i)}
		var res lifecycle.ScavengeResult
		b.StartTimer()
		t0 := time.Now()
		rate, lat := m.measure(b, 0, func() {
			res, err = lifecycle.For(s).Scavenge(ctx, lifecycle.ScavengeOptions{})
			if err != nil {
				b.Fatalf("scavenge: %v", err)
			}
		})
		el := time.Since(t0)
		b.StopTimer()
		if res.Removed != int64(n/2) {
			b.Fatalf("removed %d of %d events, want half", res.Removed, n)
		}
		total += el
		removed += res.Removed
		reclaimed += res.BytesReclaimed
		before += res.BytesBefore
		during += rate
		latDuring = append(latDuring, lat...)
		rate, lat = m.measure(b, el, nil)
		alone += rate
		latAlone = append(latAlone, lat...)
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
	}
	k := float64(b.N)
	b.ReportMetric(total.Seconds()/k, "scavenge_s")
	b.ReportMetric(float64(removed)/k, "removed")
	b.ReportMetric(float64(removed)/total.Seconds(), "removed/s")
	b.ReportMetric(float64(reclaimed)/k/1e6, "reclaimed_MB")
	b.ReportMetric(float64(before)/k/1e6, "file_MB")
	b.ReportMetric(during/k, "during_appends/s")
	b.ReportMetric(alone/k, "alone_appends/s")
	if alone > 0 {
		b.ReportMetric(during/alone, "x_alone")
	}
	reportLatency(b, "during_", latDuring)
	reportLatency(b, "alone_", latAlone)
}
