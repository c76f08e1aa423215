package aggregate_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"github.com/eventlite/eventlite/aggregate"
	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/store"
)

// benchStore builds a store holding one counter stream of n events
// (bulk appends of 1,000) and, when snapEvery > 0, the snapshot a
// snapshotting handler would have left.
func benchStore(b *testing.B, n, snapEvery int) (*store.Store, string) {
	b.Helper()
	ctx := context.Background()
	path := filepath.Join(b.TempDir(), "agg.db")
	s, err := store.Open(ctx, path, &store.Options{Synchronous: "NORMAL"})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	batch := make([]envelope.Event, 0, 1000)
	var state Counter
	def := counterDef()
	state = def.Initial()
	for i := range n {
		e, _ := envelope.New("counter.added", Added{N: i%7 + 1, By: fmt.Sprint(i % 5)})
		e.Source = "/bench"
		batch = append(batch, e)
		if len(batch) == cap(batch) || i == n-1 {
			res, err := s.Append(ctx, "default", "hot", store.Any, batch...)
			if err != nil {
				b.Fatal(err)
			}
			for _, se := range res.Events {
				p, _ := def.Registry.Decode(se)
				state = def.Evolve(state, aggregate.Event{Event: se, Payload: p})
				if snapEvery > 0 && se.StreamVersion%int64(snapEvery) == 0 {
					st, _ := json.Marshal(state)
					if err := s.Update(ctx, func(tx *store.Tx) error {
						return tx.SaveSnapshot(ctx, store.Snapshot{Tenant: "default", Stream: "hot", SchemaVersion: 1, Version: se.StreamVersion, State: st})
					}); err != nil {
						b.Fatal(err)
					}
				}
			}
			batch = batch[:0]
		}
	}
	return s, path
}

// rawLoad is the baseline: the same rows and columns read with a plain
// SELECT, data decoded with plain json.Unmarshal, folded the same way.
func rawLoad(b *testing.B, db *sql.DB, evolve func(Counter, aggregate.Event) Counter) Counter {
	rows, err := db.Query(`SELECT position, tenant, stream_id, version, event_id, type, source, time,
		content_type, data, attrs FROM events
		WHERE tenant = ? AND stream_id = ? ORDER BY version`, "default", "hot")
	if err != nil {
		b.Fatal(err)
	}
	defer rows.Close()
	state := Counter{By: map[string]int{}}
	for rows.Next() {
		var e envelope.Event
		var t int64
		var attrs []byte
		if err := rows.Scan(&e.Position, &e.Tenant, &e.Stream, &e.StreamVersion, &e.ID, &e.Type, &e.Source, &t,
			&e.DataContentType, &e.Data, &attrs); err != nil {
			b.Fatal(err)
		}
		var a Added
		if err := json.Unmarshal(e.Data, &a); err != nil {
			b.Fatal(err)
		}
		state = evolve(state, aggregate.Event{Event: e, Payload: a})
	}
	if err := rows.Err(); err != nil {
		b.Fatal(err)
	}
	return state
}

// BenchmarkLoad loads a 1,000- and a 100,000-event aggregate with and
// without snapshots, against the raw read of the same rows in the same
// run: x_raw is raw time / handler time (1.0 = as fast as raw).
func BenchmarkLoad(b *testing.B) {
	for _, n := range []int{1000, 100000} {
		for _, snap := range []int{0, 1000} {
			name := fmt.Sprintf("events=%d/snapshots=%v", n, snap > 0)
			b.Run(name, func(b *testing.B) {
				if testing.Short() && n > 1000 {
					b.Skip("large fixture")
				}
				s, path := benchStore(b, n, snap)
				def := counterDef()
				def.SnapshotEvery = snap
				// A fold that costs next to nothing, so the figure measures
				// loading, not the example's map copying.
				def.Evolve = func(c Counter, ev aggregate.Event) Counter {
					c.Total += ev.Payload.(Added).N
					c.Events++
					return c
				}
				h, err := aggregate.New(s, def, nil)
				if err != nil {
					b.Fatal(err)
				}
				db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
				if err != nil {
					b.Fatal(err)
				}
				defer db.Close()
				ctx := context.Background()
				want := rawLoad(b, db, def.Evolve)
				var rawT, storeT time.Duration
				b.ResetTimer()
				for b.Loop() {
					t0 := time.Now()
					rawLoad(b, db, def.Evolve)
					t1 := time.Now()
					got, v, err := h.Load(ctx, "default", "hot")
					t2 := time.Now()
					if err != nil || v != int64(n) || got.Total != want.Total {
						b.Fatalf("load: v=%d total=%d want %d (%v)", v, got.Total, want.Total, err)
					}
					rawT += t1.Sub(t0)
					storeT += t2.Sub(t1)
				}
				b.ReportMetric(float64(rawT)/float64(storeT), "x_raw")
				b.ReportMetric(float64(n)*float64(b.N)/storeT.Seconds(), "events/s")
			})
		}
	}
}

// BenchmarkCommands: commands per second through Handle (load, decide,
// append, FULL sync), on one hot aggregate with 16 senders and spread over
// 1,000 aggregates.
func BenchmarkCommands(b *testing.B) {
	for _, streams := range []int{1, 1000} {
		b.Run(fmt.Sprintf("aggregates=%d/senders=16", streams), func(b *testing.B) {
			ctx := context.Background()
			s, err := store.Open(ctx, filepath.Join(b.TempDir(), "cmd.db"), nil)
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			def := counterDef()
			def.SnapshotEvery = 100
			h, err := aggregate.New(s, def, &aggregate.Options{MaxAttempts: 1000})
			if err != nil {
				b.Fatal(err)
			}
			var next atomic.Int64
			b.ResetTimer()
			start := time.Now()
			var wg sync.WaitGroup
			for w := range 16 {
				wg.Go(func() {
					for {
						i := next.Add(1)
						if i > int64(b.N) {
							return
						}
						stream := fmt.Sprintf("agg-%d", i%int64(streams))
						_, err := h.Handle(ctx, aggregate.Command{Stream: stream, OperationID: fmt.Sprintf("op-%d", i), Payload: Add{N: 1, By: fmt.Sprint(w)}})
						if err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			el := time.Since(start)
			b.ReportMetric(float64(b.N)/el.Seconds(), "commands/s")
		})
	}
}
