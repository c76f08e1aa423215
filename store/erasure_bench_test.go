package store_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/store"
)

// erasureBenchData is a typical personal record, about 150 bytes.
var erasureBenchData = map[string]string{
	"name": "Alice Example", "email": "alice.example@example.org",
	"street": "12 Rue des Exemples", "city": "Lyon", "phone": "+33 4 00 00 00 00",
}

// BenchmarkErasureAppend appends one plain event and one encrypted event
// (erasurekey set, one subject per stream, its key cached after the first
// append) alternately, one event per append at synchronous NORMAL (so
// the CPU the encryption adds shows rather than the fsync), and reports
// each's ns per append and their ratio (x_plain: encrypted time over
// plain time).
func BenchmarkErasureAppend(b *testing.B) {
	ctx := context.Background()
	s, err := store.Open(ctx, filepath.Join(b.TempDir(), "b.db"), &store.Options{Synchronous: "NORMAL", MasterKey: testMasterKey(b, 11)})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	plain := ev(b, "user.registered", erasureBenchData)
	var tPlain, tSealed time.Duration
	b.ResetTimer()
	for i := range b.N {
		e := plain
		e.ID = ""
		t0 := time.Now()
		if _, err := s.Append(ctx, "default", "plain", store.Any, e); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if _, err := s.Append(ctx, "default", "sealed", store.Any, e.WithErasureKey(fmt.Sprint("subject-", i%8))); err != nil {
			b.Fatal(err)
		}
		tPlain += t1.Sub(t0)
		tSealed += time.Since(t1)
	}
	b.StopTimer()
	b.ReportMetric(float64(tPlain.Nanoseconds())/float64(b.N), "ns/plain")
	b.ReportMetric(float64(tSealed.Nanoseconds())/float64(b.N), "ns/encrypted")
	b.ReportMetric(float64(tSealed)/float64(tPlain), "x_plain")
}

// BenchmarkErasureRead reads a 1,000-event stream of plain events and
// one of encrypted events, alternately, and reports ns per event of each
// and their ratio. subjects is how many subjects the encrypted events
// belong to: 1 (one cached key), 1,000 (every key cached after the first
// read) and 10,000 events of 10,000 subjects, more than the 4,096 keys
// the store caches, so most reads look a key up in the database and
// unwrap it.
func BenchmarkErasureRead(b *testing.B) {
	for _, subjects := range []int{1, 1000, 10000} {
		b.Run(fmt.Sprintf("subjects=%d", subjects), func(b *testing.B) {
			ctx := context.Background()
			s, err := store.Open(ctx, filepath.Join(b.TempDir(), "b.db"), &store.Options{Synchronous: "NORMAL", MasterKey: testMasterKey(b, 12)})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = s.Close() })
			n := max(1000, subjects)
			for start := 0; start < n; start += 100 {
				var ps, es []envelope.Event
				for i := start; i < start+100; i++ {
					e := ev(b, "user.registered", erasureBenchData)
					ps = append(ps, e)
					e2 := ev(b, "user.registered", erasureBenchData)
					es = append(es, e2.WithErasureKey(fmt.Sprint("subject-", i%subjects)))
				}
				if _, err := s.Append(ctx, "default", "plain", store.Any, ps...); err != nil {
					b.Fatal(err)
				}
				if _, err := s.Append(ctx, "default", "sealed", store.Any, es...); err != nil {
					b.Fatal(err)
				}
			}
			read := func(stream string) time.Duration {
				t0 := time.Now()
				k := 0
				for e, err := range s.ReadStream(ctx, "default", stream, store.ReadStreamOptions{}) {
					if err != nil || e.Data == nil {
						b.Fatalf("read %s: %v", stream, err)
					}
					k++
				}
				if k != n {
					b.Fatalf("read %d events of %s, want %d", k, stream, n)
				}
				return time.Since(t0)
			}
			var tPlain, tSealed time.Duration
			b.ResetTimer()
			for range b.N {
				tPlain += read("plain")
				tSealed += read("sealed")
			}
			b.StopTimer()
			events := float64(b.N) * float64(n)
			b.ReportMetric(float64(tPlain.Nanoseconds())/events, "ns/plain_ev")
			b.ReportMetric(float64(tSealed.Nanoseconds())/events, "ns/encrypted_ev")
			b.ReportMetric(float64(tSealed)/float64(tPlain), "x_plain")
		})
	}
}
