package store_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/drivertest"
)

// erasureBenchData is a typical personal record, about 150 bytes.
var erasureBenchData = map[string]string{
	"name": "Alice Example", "email": "alice.example@example.org",
	"street": "12 Rue des Exemples", "city": "Lyon", "phone": "+33 4 00 00 00 00",
}

// BenchmarkErasureAppend appends one plain event and one encrypted event
// (erasurekey set, eight subjects, their keys cached after their first
// append) alternately, one event per append at synchronous NORMAL (so
// the CPU the encryption adds shows rather than the fsync), and reports
// each's ns per append and their ratio (x_plain: encrypted time over
// plain time).
func BenchmarkErasureAppend(b *testing.B) {
	ctx := context.Background()
	s, err := store.Open(ctx, filepath.Join(b.TempDir(), "b.db"), &store.Options{Synchronous: "NORMAL", MasterKey: drivertest.MasterKey(b, 11)})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	plain := drivertest.Event(b, "user.registered", erasureBenchData)
	plain.Extensions = map[string]any{"subjectref": "subject-0"} // as many extensions as the encrypted
	var tPlain, tSealed time.Duration
	b.ResetTimer()
	for i := range b.N {
		e := plain
		e.ID = ""
		sealed := e.WithErasureKey(fmt.Sprint("subject-", i%8))
		// Alternate which goes first, so that neither pays for the other.
		for k := range 2 {
			t0 := time.Now()
			if (i+k)%2 == 0 {
				if _, err := s.Append(ctx, "default", "plain", store.Any, e); err != nil {
					b.Fatal(err)
				}
				tPlain += time.Since(t0)
			} else {
				if _, err := s.Append(ctx, "default", "sealed", store.Any, sealed); err != nil {
					b.Fatal(err)
				}
				tSealed += time.Since(t0)
			}
		}
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
// read) and 5,000 events of 5,000 subjects, more than the 4,096 keys the
// store caches, so many reads look a key up in the database and unwrap
// it.
func BenchmarkErasureRead(b *testing.B) {
	for _, subjects := range []int{1, 1000, 5000} {
		b.Run(fmt.Sprintf("subjects=%d", subjects), func(b *testing.B) {
			ctx := context.Background()
			s, err := store.Open(ctx, filepath.Join(b.TempDir(), "b.db"), &store.Options{Synchronous: "NORMAL", MasterKey: drivertest.MasterKey(b, 12)})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = s.Close() })
			n := max(1000, subjects)
			for start := 0; start < n; start += 100 {
				var ps, es []envelope.Event
				for i := start; i < start+100; i++ {
					// The plain event carries an extension of the same size,
					// so that the ratio shows decryption and the key
					// lookup, not the decoding of extensions.
					e := drivertest.Event(b, "user.registered", erasureBenchData)
					e.Extensions = map[string]any{"subjectref": fmt.Sprint("subject-", i%subjects)}
					ps = append(ps, e)
					e2 := drivertest.Event(b, "user.registered", erasureBenchData)
					es = append(es, e2.WithErasureKey(fmt.Sprint("subject-", i%subjects)))
				}
				// One transaction per 100 events: the keys of a batch are
				// created in its transaction.
				if err := s.Update(ctx, func(tx *store.Tx) error {
					if _, err := tx.Append(ctx, "default", "plain", store.Any, ps...); err != nil {
						return err
					}
					_, err := tx.Append(ctx, "default", "sealed", store.Any, es...)
					return err
				}); err != nil {
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
