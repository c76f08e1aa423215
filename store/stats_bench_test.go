package store_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/store"
)

// BenchmarkAppendStatsTriggers measures what the stats generation's
// triggers (migration 0021) cost an append: two SQLite files, one as
// migrated and one with the stats_* triggers dropped, appended to in
// alternating chunks (the order flips every chunk) in one run, batches of
// 1 and 100 events to 100 streams. x_without is the median chunk time
// with the triggers over the median without; p50 over chunks.
//
//	go test ./store -run '^$' -bench BenchmarkAppendStatsTriggers -benchtime 2000x -count 5
func BenchmarkAppendStatsTriggers(b *testing.B) {
	for _, c := range []struct{ batch, chunk int }{{1, 50}, {100, 5}} {
		b.Run(fmt.Sprintf("batch=%d", c.batch), func(b *testing.B) {
			ctx := context.Background()
			dir := b.TempDir()
			open := func(name string, drop bool) *store.Store {
				path := filepath.Join(dir, name)
				s, err := store.Open(ctx, path, &store.Options{Synchronous: "FULL"})
				if err != nil {
					b.Fatal(err)
				}
				if !drop {
					return s
				}
				if err := s.Close(); err != nil {
					b.Fatal(err)
				}
				db, err := sql.Open("sqlite", "file:"+filepath.ToSlash(path))
				if err != nil {
					b.Fatal(err)
				}
				for _, t := range []string{"stats_events_deleted", "stats_events_moved", "stats_streams_inserted", "stats_streams_updated",
					"stats_streams_deleted", "stats_gaps_inserted", "stats_gaps_updated", "stats_gaps_deleted"} {
					if _, err := db.Exec(`DROP TRIGGER ` + t); err != nil {
						b.Fatal(err)
					}
				}
				if err := db.Close(); err != nil {
					b.Fatal(err)
				}
				if s, err = store.Open(ctx, path, &store.Options{Synchronous: "FULL"}); err != nil {
					b.Fatal(err)
				}
				return s
			}
			with, without := open("with.db", false), open("without.db", true)
			defer with.Close()
			defer without.Close()
			g := newBenchGen(1)
			var tw, to []time.Duration
			i := 0
			run := func(s *store.Store, evs [][]envelope.Event) time.Duration {
				t0 := time.Now()
				for j, e := range evs {
					if _, err := s.Append(ctx, "acme", fmt.Sprintf("order-%03d", (i+j)%100), store.Any, e...); err != nil {
						b.Fatal(err)
					}
				}
				return time.Since(t0)
			}
			b.ResetTimer()
			for done := 0; done < b.N; done += c.chunk {
				b.StopTimer()
				evsW, evsO := make([][]envelope.Event, c.chunk), make([][]envelope.Event, c.chunk)
				for j := range c.chunk {
					evsW[j], evsO[j] = benchEnvelopes(g.raw(c.batch)), benchEnvelopes(g.raw(c.batch))
				}
				b.StartTimer()
				if (done/c.chunk)%2 == 0 {
					tw = append(tw, run(with, evsW))
					to = append(to, run(without, evsO))
				} else {
					to = append(to, run(without, evsO))
					tw = append(tw, run(with, evsW))
				}
				i += c.chunk
			}
			b.StopTimer()
			slices.Sort(tw)
			slices.Sort(to)
			mw, mo := tw[len(tw)/2], to[len(to)/2]
			b.ReportMetric(float64(mw)/float64(mo), "x_without")
			b.ReportMetric(float64(mw.Microseconds())/float64(c.chunk), "with_us/append")
			b.ReportMetric(float64(mo.Microseconds())/float64(c.chunk), "without_us/append")
		})
	}
}
