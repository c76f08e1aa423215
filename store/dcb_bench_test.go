package store_test

// Benchmarks of tags, conditional appends and reads by query, each
// against its plain counterpart in the same run, on the same store,
// alternating which side goes first, on SQLite and on PostgreSQL
// (EVENTLITE_TEST_POSTGRES; skipped without it). Each reports both
// sides' ns per op and their ratio; see BENCHMARKS.md ("Tags, queries
// and conditions") for the commands and the figures.

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/storetest"
)

// dcbEngines open a benchmark's store: a SQLite file at synchronous
// NORMAL and FULL (NORMAL shows the CPU a feature adds; FULL what a
// user with the default sees), and a PostgreSQL schema.
var dcbEngines = []struct {
	name string
	open func(b *testing.B) *store.Store
}{
	{"sqlite/sync=NORMAL", func(b *testing.B) *store.Store {
		return openBenchStore(b, filepath.Join(b.TempDir(), "b.db"), "NORMAL")
	}},
	{"sqlite/sync=FULL", func(b *testing.B) *store.Store {
		return openBenchStore(b, filepath.Join(b.TempDir(), "b.db"), "FULL")
	}},
	{"postgres", func(b *testing.B) *store.Store {
		s, err := store.Open(context.Background(), storetest.PostgresSchema(b, storetest.PostgresBase(b)), nil)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = s.Close() })
		return s
	}},
}

// dcbEvents returns n benchmark events (realistic data, fresh ids),
// each with the three tags of tags(i) when tags is set.
func dcbEvents(g *benchGen, n int, tags func(i int) []string) []envelope.Event {
	evs := benchEnvelopes(g.raw(n))
	if tags != nil {
		for i := range evs {
			evs[i].Tags = tags(i)
		}
	}
	return evs
}

// threeTags are an order's tags: one of its own, its customer's (one of
// 1,000) and its region's (one of 5).
func threeTags(seq int) []string {
	return []string{"order:" + strconv.Itoa(seq), "customer:c" + strconv.Itoa(seq%1000), "region:r" + strconv.Itoa(seq%5)}
}

// pairedTimes alternates two sides b.N times, which goes first turning
// each round, and returns each side's total time.
func pairedTimes(b *testing.B, prep func(i int), first, second func(i int)) (t1, t2 time.Duration) {
	b.ResetTimer()
	for i := range b.N {
		if prep != nil {
			b.StopTimer()
			prep(i)
			b.StartTimer()
		}
		for k := range 2 {
			t0 := time.Now()
			if (i+k)%2 == 0 {
				first(i)
				t1 += time.Since(t0)
			} else {
				second(i)
				t2 += time.Since(t0)
			}
		}
	}
	b.StopTimer()
	return t1, t2
}

// BenchmarkTaggedAppend appends batches of 1 and 100 events per
// transaction with three tags each and without tags, alternately, to
// 100 streams each, and reports ns per event of each side and
// x_untagged, the tagged rate over the untagged rate (target: at least
// 0.8).
func BenchmarkTaggedAppend(b *testing.B) {
	for _, eng := range dcbEngines {
		for _, batch := range []int{1, 100} {
			b.Run(fmt.Sprintf("%s/batch=%d", eng.name, batch), func(b *testing.B) {
				s := eng.open(b)
				ctx := context.Background()
				g := newBenchGen(3)
				var plain, tagged []envelope.Event
				seq := 0
				prep := func(int) {
					plain = dcbEvents(g, batch, nil)
					tagged = dcbEvents(g, batch, func(i int) []string { return threeTags(seq + i) })
					seq += batch
				}
				tPlain, tTagged := pairedTimes(b, prep, func(i int) {
					if _, err := s.Append(ctx, "acme", fmt.Sprintf("plain-%02d", i%100), store.Any, plain...); err != nil {
						b.Fatal(err)
					}
				}, func(i int) {
					if _, err := s.Append(ctx, "acme", fmt.Sprintf("tagged-%02d", i%100), store.Any, tagged...); err != nil {
						b.Fatal(err)
					}
				})
				events := float64(b.N) * float64(batch)
				b.ReportMetric(float64(tPlain.Nanoseconds())/events, "ns/untagged_ev")
				b.ReportMetric(float64(tTagged.Nanoseconds())/events, "ns/tagged_ev")
				b.ReportMetric(float64(tPlain)/float64(tTagged), "x_untagged")
			})
		}
	}
}

// BenchmarkConditionalAppend appends one event with three tags per
// transaction, with a condition (one item of one tag that 100 older
// events carry, after the newest position the benchmark knows: it never
// matches) and without, alternately, and reports ns per append of each
// side and x_plain, the conditional rate over the plain rate (target: at
// least 0.8).
func BenchmarkConditionalAppend(b *testing.B) {
	for _, eng := range dcbEngines {
		b.Run(eng.name, func(b *testing.B) {
			s := eng.open(b)
			ctx := context.Background()
			g := newBenchGen(4)
			old := dcbEvents(g, 100, func(int) []string { return []string{"course:c1"} })
			res, err := s.Append(ctx, "acme", "course-c1", store.Any, old...)
			if err != nil {
				b.Fatal(err)
			}
			last := res.LastPosition()
			q := store.Query{Items: []store.QueryItem{{Tags: []string{"course:c1"}}}}
			var plain, cond []envelope.Event
			seq := 0
			prep := func(int) {
				plain = dcbEvents(g, 1, func(i int) []string { return threeTags(seq) })
				cond = dcbEvents(g, 1, func(i int) []string { return threeTags(seq + 1) })
				seq += 2
			}
			tPlain, tCond := pairedTimes(b, prep, func(i int) {
				r, err := s.Append(ctx, "acme", fmt.Sprintf("plain-%02d", i%100), store.Any, plain...)
				if err != nil {
					b.Fatal(err)
				}
				last = r.LastPosition()
			}, func(i int) {
				r, err := s.Append(ctx, "acme", fmt.Sprintf("cond-%02d", i%100), store.Any.If(store.Condition{Query: q, After: last}), cond...)
				if err != nil {
					b.Fatal(err)
				}
				last = r.LastPosition()
			})
			b.ReportMetric(float64(tPlain.Nanoseconds())/float64(b.N), "ns/plain")
			b.ReportMetric(float64(tCond.Nanoseconds())/float64(b.N), "ns/conditional")
			b.ReportMetric(float64(tPlain)/float64(tCond), "x_plain")
		})
	}
}

// queryBenchEvents is the size of BenchmarkReadByQuery's log: 100,000
// events by default, 20,000 under -short, EVENTLITE_BENCH_QUERY_EVENTS
// when set (the 1,000,000 of BENCHMARKS.md).
func queryBenchEvents() int {
	if v, err := strconv.Atoi(os.Getenv("EVENTLITE_BENCH_QUERY_EVENTS")); err == nil && v >= 1000 {
		return v
	}
	if testing.Short() {
		return 20_000
	}
	return 100_000
}

// queryFixture is a store holding BenchmarkReadByQuery's log, built once
// per engine and benchmark binary (the benchmark function runs several
// times: building a log of a million events each time would take most
// of the run); closeQueryFixtures, from TestMain, closes the stores and
// drops their files and schemas.
type queryFixture struct {
	s    *store.Store
	done func()
}

var (
	queryFixturesMu sync.Mutex
	queryFixtures   = map[string]*queryFixture{}
)

func closeQueryFixtures() {
	queryFixturesMu.Lock()
	defer queryFixturesMu.Unlock()
	for name, f := range queryFixtures {
		_ = f.s.Close()
		f.done()
		delete(queryFixtures, name)
	}
}

// queryStore returns the engine's store with the benchmark's log,
// building it on the first call.
func queryStore(b *testing.B, engine string) *store.Store {
	queryFixturesMu.Lock()
	defer queryFixturesMu.Unlock()
	if f := queryFixtures[engine]; f != nil {
		return f.s
	}
	ctx := context.Background()
	var f queryFixture
	switch engine {
	case "sqlite":
		dir, err := os.MkdirTemp("", "eventlite-querybench")
		if err != nil {
			b.Fatal(err)
		}
		if f.s, err = store.Open(ctx, filepath.Join(dir, "b.db"), &store.Options{Synchronous: "NORMAL"}); err != nil {
			b.Fatal(err)
		}
		f.done = func() { _ = os.RemoveAll(dir) }
	case "postgres":
		base := storetest.PostgresBase(b)
		schema := fmt.Sprintf("querybench_%d", time.Now().UnixNano())
		addr := withParam(b, base, "eventlite_schema", schema)
		var err error
		if f.s, err = store.Open(ctx, addr, nil); err != nil {
			b.Fatal(err)
		}
		f.done = func() {
			db, err := sql.Open("pgx", base)
			if err != nil {
				return
			}
			defer db.Close()
			_, _ = db.Exec(`DROP SCHEMA IF EXISTS "` + schema + `" CASCADE`)
		}
	}
	fillQueryLog(b, f.s)
	queryFixtures[engine] = &f
	return f.s
}

// queryNeedles is how many events BenchmarkReadByQuery's tag matches.
const queryNeedles = 100

// fillQueryLog appends queryBenchEvents() events in transactions of
// 1,000: each with three tags (its own, one of 1,000 customers', one of
// 5 regions'), in 1,000 streams, and among them, evenly spread, the 100
// events of the stream "needle", tagged needle:1 (and a customer and a
// region tag that thousands of others carry).
func fillQueryLog(b *testing.B, s *store.Store) {
	ctx := context.Background()
	g := newBenchGen(5)
	n := queryBenchEvents()
	const batch = 1000
	every := n / queryNeedles
	t0 := time.Now()
	for start := 0; start < n; start += batch {
		var hay, needle []envelope.Event
		for i := start; i < start+batch && i < n; i++ {
			if i%every == every/2 {
				needle = append(needle, dcbEvents(g, 1, func(int) []string { return []string{"needle:1", "customer:c1", "region:r1"} })...)
				continue
			}
			hay = append(hay, dcbEvents(g, 1, func(int) []string { return threeTags(i) })...)
		}
		if err := s.Update(ctx, func(tx *store.Tx) error {
			for k := 0; k < len(hay); k += 100 {
				if _, err := tx.Append(ctx, "acme", fmt.Sprintf("order-%03d", (start/100+k/100)%1000), store.Any, hay[k:min(k+100, len(hay))]...); err != nil {
					return err
				}
			}
			if len(needle) > 0 {
				_, err := tx.Append(ctx, "acme", "needle", store.Any, needle...)
				return err
			}
			return nil
		}); err != nil {
			b.Fatal(err)
		}
	}
	b.Logf("built a log of %d events in %v", n, time.Since(t0).Round(time.Second))
}

// BenchmarkReadByQuery reads the 100 events tagged needle:1 out of a log
// of queryBenchEvents() events (see fillQueryLog), by query, and the
// same 100 events as the stream that holds them, alternately, and
// reports ns per read of each and x_stream, the query's time over the
// stream's (target: at most 2).
func BenchmarkReadByQuery(b *testing.B) {
	for _, engine := range []string{"sqlite", "postgres"} {
		b.Run(engine, func(b *testing.B) {
			s := queryStore(b, engine)
			ctx := context.Background()
			q := store.Query{Items: []store.QueryItem{{Tags: []string{"needle:1"}}}}
			read := func(seq func(yield func(envelope.Event, error) bool)) {
				k := 0
				for _, err := range seq {
					if err != nil {
						b.Fatal(err)
					}
					k++
				}
				if k != queryNeedles {
					b.Fatalf("read %d events, want %d", k, queryNeedles)
				}
			}
			tStream, tQuery := pairedTimes(b, nil, func(int) {
				read(s.ReadStream(ctx, "acme", "needle", store.ReadStreamOptions{}))
			}, func(int) {
				read(s.ReadAll(ctx, store.ReadAllOptions{Tenant: "acme", Query: q}))
			})
			b.ReportMetric(float64(queryBenchEvents()), "log_events")
			b.ReportMetric(float64(tStream.Nanoseconds())/float64(b.N), "ns/stream_read")
			b.ReportMetric(float64(tQuery.Nanoseconds())/float64(b.N), "ns/query_read")
			b.ReportMetric(float64(tQuery)/float64(tStream), "x_stream")
		})
	}
}
