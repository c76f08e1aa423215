package store_test

// Benchmarks of the store against the raw modernc baseline in
// rawbaseline_test.go. Every benchmark runs the baseline and the store in
// the same run, alternating in chunks on identical data, times each side
// with time.Since, and reports each side's rate and their ratio
// (x_raw = store rate / raw rate): on a shared machine absolute rates drift
// 10-15% between runs, paired ratios about 5%. ns/op is the store side's
// time per op. See BENCHMARKS.md for the commands and the figures.
//
// The 1M-event file is built once per benchmark binary, with raw SQL in
// big transactions, in a temp dir removed when the binary ends
// (TestMain), and copied into a minimal table beside it. Set
// EVENTLITE_BENCH_FIXTURE=/some/file.db to build both there once and
// reuse them across runs (they are then never removed). Under -short it
// holds 20,000 events.

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/internal/benchdata"
	"github.com/eventlite/eventlite/store"
)

// ---------------------------------------------------------------------
// Data: realistic 200-300 byte JSON payloads, time-ordered ULIDs.

var benchTypes = []string{"order.placed", "order.item_added", "order.paid", "order.shipped"}

// benchOrder is the data of every benchmark event.
type benchOrder = benchdata.Order

// benchGen makes events: fresh ULIDs (time-ordered), payloads from a
// pool.
type benchGen struct {
	rng      *rand.Rand
	payloads [][]byte
}

func newBenchGen(seed uint64) *benchGen {
	g := &benchGen{rng: rand.New(rand.NewPCG(seed, 42))}
	for i := range 1024 {
		g.payloads = append(g.payloads, benchdata.Payload(g.rng, fmt.Sprintf("ord_%06d", i)))
	}
	return g
}

func (g *benchGen) raw(n int) []rawEvent {
	evs := make([]rawEvent, n)
	for i := range evs {
		evs[i] = rawEvent{
			ID:   ulid.Make().String(),
			Type: benchTypes[g.rng.IntN(len(benchTypes))],
			Data: g.payloads[g.rng.IntN(len(g.payloads))],
		}
	}
	return evs
}

// benchEnvelopes turns raw events into the events the store is given:
// the same id, type and data.
func benchEnvelopes(raw []rawEvent) []envelope.Event {
	evs := make([]envelope.Event, len(raw))
	for i, r := range raw {
		evs[i] = envelope.Event{ID: r.ID, Source: rawSource, Type: r.Type, DataContentType: rawContentType, Data: r.Data}
	}
	return evs
}

// ---------------------------------------------------------------------
// Pairing: sides run alternately in chunks; each is timed on its own.

type benchSide struct {
	name string
	// div makes this side run k/div ops of a chunk of k (at least one);
	// 0 means all k.
	div int
	run func(k int) // the timed work: k ops
	// open and close, when set, run untimed before and after each of
	// this side's chunks: a side whose file is open only while it runs
	// (see runPaired).
	open, close func()
	// lat, when the side records it, holds one latency per op.
	lat []time.Duration

	ops int
	dur time.Duration
}

func (s *benchSide) rate(perOp float64) float64 {
	if s.dur <= 0 {
		return 0
	}
	return float64(s.ops) * perOp / s.dur.Seconds()
}

// runPaired runs b.N ops on every side, chunk ops at a time, rotating
// which side goes first. prep, when set, makes the data of a chunk before
// the sides run it (untimed).
//
// Sides that write files of their own open them for their chunk only
// (benchSide.open and close, untimed): modernc.org/sqlite is built with
// SQLITE_ENABLE_MEMORY_MANAGEMENT, so every connection of the process
// draws its page cache from one shared pool, and a side that runs evicts
// the pages of the files the other sides keep open. With the files of
// two identical raw writers open together, one measured up to 2x the
// other, following the round order (BenchmarkPairing).
func runPaired(b *testing.B, chunk int, prep func(k int), sides ...*benchSide) {
	b.ResetTimer()
	for done, round := 0, 0; done < b.N; round++ {
		k := min(chunk, b.N-done)
		if prep != nil {
			b.StopTimer()
			prep(k)
			b.StartTimer()
		}
		for i := range sides {
			s := sides[(i+round)%len(sides)]
			n := k
			if s.div > 0 {
				n = max(1, k/s.div)
			}
			if s.open != nil {
				b.StopTimer()
				s.open()
				b.StartTimer()
			}
			t0 := time.Now()
			s.run(n)
			s.dur += time.Since(t0)
			s.ops += n
			if s.close != nil {
				b.StopTimer()
				s.close()
				b.StartTimer()
			}
		}
		done += k
	}
	b.StopTimer()
}

// reportPaired reports each side's events/s (perOp events per op) and
// x_raw, the store side's rate over the raw side's. The store side's time
// per op replaces ns/op (which would otherwise cover every side).
//
// A side named "min" (the minimal baseline, minbaseline_test.go) among
// others adds x_min, the store side's rate over its rate.
func reportPaired(b *testing.B, perOp float64, raw, st *benchSide, others ...*benchSide) {
	for _, s := range append([]*benchSide{raw, st}, others...) {
		b.ReportMetric(s.rate(perOp), s.name+"_ev/s")
	}
	if r := raw.rate(perOp); r > 0 {
		b.ReportMetric(st.rate(perOp)/r, "x_raw")
	}
	for _, o := range others {
		if r := o.rate(perOp); (o.name == "min" || o.name == "old") && r > 0 {
			b.ReportMetric(st.rate(perOp)/r, "x_"+o.name)
		}
	}
	if st.ops > 0 {
		b.ReportMetric(float64(st.dur.Nanoseconds())/float64(st.ops), "ns/op")
	}
}

// reportLatency reports p50, p99 and max of lat in milliseconds, with
// units prefixed by prefix.
func reportLatency(b *testing.B, prefix string, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b.ReportMetric(ms(lat[len(lat)*50/100]), prefix+"p50_ms")
	b.ReportMetric(ms(lat[min(len(lat)-1, len(lat)*99/100)]), prefix+"p99_ms")
	b.ReportMetric(ms(lat[len(lat)-1]), prefix+"max_ms")
}

func openBenchStore(b *testing.B, path, synchronous string) *store.Store {
	b.Helper()
	s, err := store.Open(context.Background(), path, &store.Options{Synchronous: synchronous})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if err := s.Close(); err != nil {
			b.Errorf("close store: %v", err)
		}
	})
	return s
}

// ---------------------------------------------------------------------
// Appends.

// reopen is a handle a side opens for each of its chunks (benchSide.open)
// and closes after it (benchSide.close); the benchmark's cleanup closes
// it if a chunk failed in between.
type reopen[T interface{ Close() error }] struct {
	b  *testing.B
	fn func() (T, error)
	h  T
	ok bool
}

func newReopen[T interface{ Close() error }](b *testing.B, fn func() (T, error)) *reopen[T] {
	r := &reopen[T]{b: b, fn: fn}
	b.Cleanup(func() {
		if r.ok {
			r.close()
		}
	})
	return r
}

func (r *reopen[T]) open() {
	h, err := r.fn()
	if err != nil {
		r.b.Fatal(err)
	}
	r.h, r.ok = h, true
}

func (r *reopen[T]) close() {
	r.ok = false
	if err := r.h.Close(); err != nil {
		r.b.Error(err)
	}
}

func benchStoreOpener(path, synchronous string) func() (*store.Store, error) {
	return func() (*store.Store, error) {
		return store.Open(context.Background(), path, &store.Options{Synchronous: synchronous})
	}
}

// BenchmarkAppend appends batches of 1 or 100 events per transaction to
// 100 streams in turn, from one goroutine: the store, the raw baseline
// (raw, x_raw), the minimal baseline (min, x_min) and the store's schema
// and statements before the append-cost work (old, x_old), each on a file of
// its own that is open only while its side runs, and boundDB, the
// cheapest statements on the store's schema and nothing else (bound:
// bound_x_min is the ceiling of the store's x_min on its schema, x_bound
// the store's rate over it). Latencies: p50_ms and so on for the store,
// raw_p50_ms and so on for the raw baseline. Batches of 100 also run
// rawprep: the raw baseline after envelope's Prepare of each event.
func BenchmarkAppend(b *testing.B) {
	for _, c := range []struct {
		batch int
		sync  string
		chunk int // transactions per chunk
	}{
		{1, "FULL", 200},
		{1, "NORMAL", 500},
		{100, "FULL", 5},
		{100, "NORMAL", 10},
	} {
		b.Run(fmt.Sprintf("batch=%d/sync=%s", c.batch, c.sync), func(b *testing.B) {
			dir := b.TempDir()
			raw := newReopen(b, func() (*rawDB, error) { return newRawDB(filepath.Join(dir, "raw.db"), c.sync) })
			mini := newReopen(b, func() (*minDB, error) { return newMinDB(filepath.Join(dir, "min.db"), c.sync) })
			old := newReopen(b, func() (*oldRawDB, error) { return newOldRawDB(filepath.Join(dir, "old.db"), c.sync) })
			st := newReopen(b, benchStoreOpener(filepath.Join(dir, "store.db"), c.sync))
			g := newBenchGen(1)
			ctx := context.Background()
			stream := func(i int) string { return fmt.Sprintf("order-%03d", i%100) }

			var rawEvs [][]rawEvent
			var stEvs [][]envelope.Event
			prep := func(k int) {
				rawEvs, stEvs = rawEvs[:0], stEvs[:0]
				for range k {
					r := g.raw(c.batch)
					rawEvs = append(rawEvs, r)
					stEvs = append(stEvs, benchEnvelopes(r))
				}
			}
			rs := &benchSide{name: "raw", open: raw.open, close: raw.close}
			rs.run = func(k int) {
				for i := range k {
					t0 := time.Now()
					if err := raw.h.appendTx("acme", stream(i), rawEvs[i]); err != nil {
						b.Fatal(err)
					}
					rs.lat = append(rs.lat, time.Since(t0))
				}
			}
			ms := &benchSide{name: "min", open: mini.open, close: mini.close, run: func(k int) {
				for i := range k {
					if err := mini.h.appendTx("acme", stream(i), rawEvs[i]); err != nil {
						b.Fatal(err)
					}
				}
			}}
			ss := &benchSide{name: "store", open: st.open, close: st.close}
			ss.run = func(k int) {
				for i := range k {
					t0 := time.Now()
					if _, err := st.h.Append(ctx, "acme", stream(i), store.Any, stEvs[i]...); err != nil {
						b.Fatal(err)
					}
					ss.lat = append(ss.lat, time.Since(t0))
				}
			}
			olds := &benchSide{name: "old", open: old.open, close: old.close, run: func(k int) {
				for i := range k {
					if err := old.h.appendTx("acme", stream(i), rawEvs[i]); err != nil {
						b.Fatal(err)
					}
				}
			}}
			// The ceiling on the store's schema (boundDB: its cheapest
			// statements and nothing else): bound_x_min = its rate over
			// the minimal table's, x_bound = the store's over its.
			bound := newReopen(b, func() (*boundDB, error) { return newBoundDB(filepath.Join(dir, "bound.db"), c.sync) })
			bs := &benchSide{name: "bound", open: bound.open, close: bound.close, run: func(k int) {
				for i := range k {
					if err := bound.h.appendTx("acme", stream(i), rawEvs[i]); err != nil {
						b.Fatal(err)
					}
				}
			}}
			sides := []*benchSide{rs, ss, ms, olds, bs}
			var rp *benchSide
			if c.batch > 1 {
				// The raw baseline plus the validation the store does
				// before its transaction (envelope's Prepare of every
				// event): x_rawprep = store rate / this rate shows what
				// the store costs beyond validating.
				rawPrep := newReopen(b, func() (*rawDB, error) { return newRawDB(filepath.Join(dir, "rawprep.db"), c.sync) })
				rp = &benchSide{name: "rawprep", open: rawPrep.open, close: rawPrep.close, run: func(k int) {
					now := time.Now()
					for i := range k {
						for _, e := range stEvs[i] {
							e.Tenant, e.Stream = "acme", stream(i)
							if err := e.Prepare(now, 0); err != nil {
								b.Fatal(err)
							}
						}
						if err := rawPrep.h.appendTx("acme", stream(i), rawEvs[i]); err != nil {
							b.Fatal(err)
						}
					}
				}}
				sides = append(sides, rp)
			}
			runPaired(b, c.chunk, prep, sides...)
			reportPaired(b, float64(c.batch), rs, ss, sides[2:]...)
			if br, mr := bs.rate(float64(c.batch)), ms.rate(float64(c.batch)); br > 0 && mr > 0 {
				b.ReportMetric(ss.rate(float64(c.batch))/br, "x_bound")
				b.ReportMetric(br/mr, "bound_x_min")
			}
			if rp != nil {
				if r := rp.rate(float64(c.batch)); r > 0 {
					b.ReportMetric(ss.rate(float64(c.batch))/r, "x_rawprep")
				}
			}
			reportLatency(b, "", ss.lat)
			reportLatency(b, "raw_", rs.lat)
		})
	}
}

// BenchmarkConcurrentAppend runs n appenders, each appending one event at
// a time to a stream of its own, at FULL: the store against a raw
// group-commit writer (rawGroup on rawDB, x_raw), the same group commit
// on the minimal table (x_min), and a raw serial writer (one goroutine,
// one transaction per append, 1/8 of the ops) for the group-commit gain
// (x_serial = store rate / serial rate). Each side's file is open only
// while it runs. Latencies are every append's, from the appender's call
// to its return: p50_ms and so on for the store, raw_p50_ms and so on for
// the raw group commit.
func BenchmarkConcurrentAppend(b *testing.B) {
	for _, n := range []int{16, 64} {
		b.Run(fmt.Sprintf("appenders=%d", n), func(b *testing.B) {
			dir := b.TempDir()
			serial := newReopen(b, func() (*rawDB, error) { return newRawDB(filepath.Join(dir, "serial.db"), "FULL") })
			raw := newReopen(b, func() (*rawDB, error) { return newRawDB(filepath.Join(dir, "raw.db"), "FULL") })
			mini := newReopen(b, func() (*minDB, error) { return newMinDB(filepath.Join(dir, "min.db"), "FULL") })
			st := newReopen(b, benchStoreOpener(filepath.Join(dir, "store.db"), "FULL"))
			g := newBenchGen(2)
			ctx := context.Background()

			var rawEvs []rawEvent
			var stEvs []envelope.Event
			prep := func(k int) {
				rawEvs = g.raw(k)
				stEvs = benchEnvelopes(rawEvs)
			}
			// fan runs k appends over n goroutines; append(w, i) does the
			// i-th for appender w. It returns every append's latency.
			fan := func(k int, append1 func(w, i int) error) []time.Duration {
				lats := make([][]time.Duration, n)
				var wg sync.WaitGroup
				for w := range n {
					wg.Go(func() {
						for i := w; i < k; i += n {
							t0 := time.Now()
							if err := append1(w, i); err != nil {
								b.Error(err)
								return
							}
							lats[w] = append(lats[w], time.Since(t0))
						}
					})
				}
				wg.Wait()
				return slices.Concat(lats...)
			}
			streamOf := func(w int) string { return fmt.Sprintf("appender-%02d", w) }
			var group *rawGroup
			rs := &benchSide{name: "raw",
				open:  func() { raw.open(); group = startRawGroup(raw.h.groupStmts()) },
				close: func() { group.stop(); raw.close() }}
			rs.run = func(k int) {
				rs.lat = append(rs.lat, fan(k, func(w, i int) error {
					return group.append("acme", streamOf(w), rawEvs[i:i+1])
				})...)
			}
			var minGroup *rawGroup
			ms := &benchSide{name: "min",
				open:  func() { mini.open(); minGroup = startRawGroup(mini.h.groupStmts()) },
				close: func() { minGroup.stop(); mini.close() },
				run: func(k int) {
					fan(k, func(w, i int) error {
						return minGroup.append("acme", streamOf(w), rawEvs[i:i+1])
					})
				}}
			ss := &benchSide{name: "store", open: st.open, close: st.close}
			ss.run = func(k int) {
				ss.lat = append(ss.lat, fan(k, func(w, i int) error {
					_, err := st.h.Append(ctx, "acme", streamOf(w), store.Any, stEvs[i])
					return err
				})...)
			}
			ser := &benchSide{name: "serial", div: 8, open: serial.open, close: serial.close, run: func(k int) {
				for i := range k {
					if err := serial.h.appendTx("acme", "serial", rawEvs[i:i+1]); err != nil {
						b.Fatal(err)
					}
				}
			}}
			runPaired(b, 25*n, prep, rs, ss, ms, ser)
			reportPaired(b, 1, rs, ss, ms, ser)
			if r := ser.rate(1); r > 0 {
				b.ReportMetric(ss.rate(1)/r, "x_serial")
			}
			reportLatency(b, "", ss.lat)
			reportLatency(b, "raw_", rs.lat)
		})
	}
}

// BenchmarkPairing measures the artifact that runPaired's open and close
// avoid: two identical raw writers (rawDB, 100 events per transaction,
// NORMAL) on two files, alternating chunk by chunk, "a" always first. With
// both files open all the time (open=both), the pages one writer leaves in
// modernc's shared page-cache pool are evicted by the other's work; with
// each file open only while its writer runs (open=one), as the other
// benchmarks do, nothing is shared. x_b_over_a is b's rate over a's: 1.0
// when the pairing is fair.
func BenchmarkPairing(b *testing.B) {
	for _, both := range []bool{true, false} {
		name := "open=one"
		if both {
			name = "open=both"
		}
		b.Run(name, func(b *testing.B) {
			dir := b.TempDir()
			g := newBenchGen(6)
			var evs [][]rawEvent
			side := func(file string) *benchSide {
				r := newReopen(b, func() (*rawDB, error) { return newRawDB(filepath.Join(dir, file), "NORMAL") })
				s := &benchSide{name: file[:1]}
				if both {
					r.open()
				} else {
					s.open, s.close = r.open, r.close
				}
				s.run = func(k int) {
					for i := range k {
						if err := r.h.appendTx("acme", fmt.Sprintf("order-%03d", i%100), evs[i]); err != nil {
							b.Fatal(err)
						}
					}
				}
				return s
			}
			sa, sb := side("a.db"), side("b.db")
			b.ResetTimer()
			for done := 0; done < b.N; {
				k := min(10, b.N-done)
				b.StopTimer()
				evs = evs[:0]
				for range k {
					evs = append(evs, g.raw(100))
				}
				b.StartTimer()
				for _, s := range []*benchSide{sa, sb} { // a first, always
					if s.open != nil {
						b.StopTimer()
						s.open()
						b.StartTimer()
					}
					t0 := time.Now()
					s.run(k)
					s.dur += time.Since(t0)
					s.ops += k
					if s.close != nil {
						b.StopTimer()
						s.close()
						b.StartTimer()
					}
				}
				done += k
			}
			b.StopTimer()
			b.ReportMetric(sa.rate(100), "a_ev/s")
			b.ReportMetric(sb.rate(100), "b_ev/s")
			if r := sa.rate(100); r > 0 {
				b.ReportMetric(sb.rate(100)/r, "x_b_over_a")
			}
		})
	}
}

// ---------------------------------------------------------------------
// Typed decoding of the payloads (no file involved).

// BenchmarkDecode decodes the benchmark payloads into their Go type with
// envelope.DecodeData and Registry.Decode against json.Unmarshal of the
// same bytes (x_raw = envelope rate / json.Unmarshal rate).
func BenchmarkDecode(b *testing.B) {
	g := newBenchGen(3)
	evs := benchEnvelopes(g.raw(len(g.payloads)))
	var reg envelope.Registry
	for _, t := range benchTypes {
		envelope.Register[benchOrder](&reg, t)
	}
	var sink int64
	raw := &benchSide{name: "raw", run: func(k int) {
		for i := range k {
			var o benchOrder
			if err := json.Unmarshal(evs[i%len(evs)].Data, &o); err != nil {
				b.Fatal(err)
			}
			sink += o.TotalCents
		}
	}}
	for _, c := range []struct {
		name   string
		decode func(e envelope.Event) (int64, error)
	}{
		{"DecodeData", func(e envelope.Event) (int64, error) {
			o, err := envelope.DecodeData[benchOrder](e)
			return o.TotalCents, err
		}},
		{"Registry", func(e envelope.Event) (int64, error) {
			v, err := reg.Decode(e)
			if err != nil {
				return 0, err
			}
			return v.(benchOrder).TotalCents, nil
		}},
	} {
		b.Run(c.name, func(b *testing.B) {
			raw.ops, raw.dur = 0, 0
			st := &benchSide{name: "envelope", run: func(k int) {
				for i := range k {
					n, err := c.decode(evs[i%len(evs)])
					if err != nil {
						b.Fatal(err)
					}
					sink += n
				}
			}}
			runPaired(b, 1000, nil, raw, st)
			reportPaired(b, 1, raw, st)
		})
	}
	_ = sink
}

// ---------------------------------------------------------------------
// The 1M-event file.

// benchFixture describes the shared file: fixtureEvents events, of which
// 1 in 100 go to 10 hot streams (hotLen events each, spread over the
// whole file) and the rest to regular streams of 10 events, 100 streams
// interleaved at a time. Streams alternate between two tenants; the hot
// streams are acme's.
type benchFixture struct {
	path    string
	events  int
	hot     []string
	hotLen  int
	regular int // regular streams: order-000000 ...
}

const benchHotStreams = 10

func (f *benchFixture) regularStream(i int) (tenant, stream string) {
	return benchTenants[i%len(benchTenants)], fmt.Sprintf("order-%06d", i)
}

var benchTenants = []string{"acme", "globex"}

var (
	fixtureOnce sync.Once
	fixture     *benchFixture
	fixtureErr  error
	fixtureDir  string // removed by TestMain when the binary ends
)

func benchFixtureEvents() int {
	if testing.Short() {
		return 20_000
	}
	return 1_000_000
}

// getFixture builds the shared file once per binary.
func getFixture(b *testing.B) *benchFixture {
	fixtureOnce.Do(func() {
		n := benchFixtureEvents()
		path := os.Getenv("EVENTLITE_BENCH_FIXTURE")
		if path == "" {
			fixtureDir, fixtureErr = os.MkdirTemp("", "eventlite-bench-")
			if fixtureErr != nil {
				return
			}
			path = filepath.Join(fixtureDir, "1m.db")
		}
		t0 := time.Now()
		fixture, fixtureErr = buildFixture(path, n)
		if fixtureErr == nil {
			b.Logf("fixture %s: %d events, ready in %v", path, n, time.Since(t0).Round(time.Millisecond))
		}
	})
	if fixtureErr != nil {
		b.Fatalf("build fixture: %v", fixtureErr)
	}
	return fixture
}

func buildFixture(path string, n int) (*benchFixture, error) {
	f := &benchFixture{path: path, events: n, hotLen: n / 100 / benchHotStreams}
	for i := range benchHotStreams {
		f.hot = append(f.hot, fmt.Sprintf("hot-%02d", i))
	}
	regularEvents := n - n/100
	f.regular = (regularEvents/1000)*100 + min(100, regularEvents%1000)

	// The store creates the schema; the rows go in with raw SQL.
	s, err := store.Open(context.Background(), path, nil)
	if err != nil {
		return nil, err
	}
	head, err := s.Head(context.Background())
	if cerr := s.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	if head >= int64(n) {
		return f, nil // reused (EVENTLITE_BENCH_FIXTURE)
	}
	if head > 0 {
		return nil, fmt.Errorf("%s holds %d events, want 0 or at least %d", path, head, n)
	}

	db, err := sql.Open("sqlite", rawDSN(path, "OFF", true))
	if err != nil {
		return nil, err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	c, err := db.Conn(rawCtx)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	insEvent, err := c.PrepareContext(rawCtx, `INSERT INTO events (tenant, stream_id, version, event_id, type, source, time,
		content_type, data, attrs, recorded_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, ?)`)
	if err != nil {
		return nil, err
	}
	defer insEvent.Close()
	// Most events were published long ago; the newest 1,000 are not.
	insOutbox, err := c.PrepareContext(rawCtx, `INSERT INTO outbox (position, attempts, published_at, broker_sequence) VALUES (?, ?, ?, ?)`)
	if err != nil {
		return nil, err
	}
	defer insOutbox.Close()
	insStream, err := c.PrepareContext(rawCtx, `INSERT INTO streams (tenant, stream_id, created_at) VALUES (?, ?, ?)`)
	if err != nil {
		return nil, err
	}
	defer insStream.Close()

	exec := func(q string) error { _, err := c.ExecContext(rawCtx, q); return err }
	// A bulk load needs no journal: write each page once, then switch
	// back to WAL (the store's mode) at the end.
	for _, q := range []string{"PRAGMA journal_mode=OFF", "PRAGMA cache_size=-262144"} {
		if err := exec(q); err != nil {
			return nil, err
		}
	}
	rng := rand.New(rand.NewPCG(7, 7))
	type streamState struct{ version, created int64 }
	hot := make([]streamState, benchHotStreams)
	regular := make([]streamState, f.regular)
	// Event times span the 30 days before now, in position order.
	start := time.Now().Add(-30 * 24 * time.Hour).UnixNano()
	step := int64(30*24*time.Hour) / int64(n)
	j := 0            // regular events so far
	var settled int64 // the outbox watermark: the newest published
	if err := exec("BEGIN IMMEDIATE"); err != nil {
		return nil, err
	}
	for i := range n {
		var tenant, stream string
		var st *streamState
		if i%100 == 50 {
			h := (i / 100) % benchHotStreams
			tenant, stream, st = "acme", f.hot[h], &hot[h]
		} else {
			idx := (j/1000)*100 + j%100
			j++
			tenant, stream = f.regularStream(idx)
			st = &regular[idx]
		}
		t := start + int64(i)*step
		st.version++
		if st.version == 1 {
			st.created = t
		}
		typ := benchTypes[min(int(st.version)-1, 1+rng.IntN(len(benchTypes)-1))]
		res, err := insEvent.ExecContext(rawCtx, tenant, stream, st.version, ulid.Make().String(), typ, rawSource, t,
			rawContentType, benchdata.Payload(rng, stream), t)
		if err != nil {
			return nil, err
		}
		pos, err := res.LastInsertId()
		if err != nil {
			return nil, err
		}
		// The ledger holds the published rows; the unpublished events
		// have none, above the watermark.
		if i < n-1000 {
			if _, err := insOutbox.ExecContext(rawCtx, pos, 1, t+int64(time.Millisecond), pos); err != nil {
				return nil, err
			}
			settled = pos
		}
		if (i+1)%100_000 == 0 {
			if err := exec("COMMIT"); err != nil {
				return nil, err
			}
			if err := exec("BEGIN IMMEDIATE"); err != nil {
				return nil, err
			}
		}
	}
	if _, err := c.ExecContext(rawCtx, `UPDATE outbox_watermark SET settled = ?1, scanned = ?1`, settled); err != nil {
		return nil, err
	}
	for h, st := range hot {
		if _, err := insStream.ExecContext(rawCtx, "acme", f.hot[h], st.created); err != nil {
			return nil, err
		}
	}
	for idx, st := range regular {
		if st.version == 0 {
			continue
		}
		tenant, stream := f.regularStream(idx)
		if _, err := insStream.ExecContext(rawCtx, tenant, stream, st.created); err != nil {
			return nil, err
		}
	}
	if err := exec("COMMIT"); err != nil {
		return nil, err
	}
	if err := exec("PRAGMA journal_mode=WAL"); err != nil {
		return nil, err
	}
	return f, nil
}

// BenchmarkFile1M runs the scenarios on the 1M-event file. Its
// sub-benchmarks share the file (built once per binary, whatever -count
// says), one store and one raw reader on it, and a minimal reader on its
// minimal copy. Append100 runs last: it
// adds events (to regular streams only) that ReadAll and ReadStream do not
// read.
func BenchmarkFile1M(b *testing.B) {
	top := b
	var (
		f    *benchFixture
		st   *store.Store
		rawR *rawReader
		minR *minReader
	)
	// Open lazily, so that a -bench pattern selecting no sub-benchmark
	// builds nothing; close when the top benchmark ends.
	setup := func(b *testing.B) {
		if f != nil {
			return
		}
		fx := getFixture(b)
		s, err := store.Open(context.Background(), fx.path, nil)
		if err != nil {
			b.Fatal(err)
		}
		top.Cleanup(func() { _ = s.Close() })
		r, err := newRawReader(fx.path)
		if err != nil {
			b.Fatal(err)
		}
		top.Cleanup(func() { _ = r.Close() })
		// The minimal baseline reads the same events from a file of its
		// own, beside the fixture (built once too).
		minPath := fx.path + ".min"
		if err := buildMinFixture(minPath, fx.path, fx.events); err != nil {
			b.Fatal(err)
		}
		m, err := newMinReader(minPath)
		if err != nil {
			b.Fatal(err)
		}
		top.Cleanup(func() { _ = m.Close() })
		// Read both files once, untimed, so that no side of the first
		// pair pays for a cold OS page cache.
		var sum int64
		for _, db := range []*sql.DB{r.db, m.db} {
			if err := db.QueryRowContext(rawCtx, `SELECT SUM(LENGTH(data)) FROM events`).Scan(&sum); err != nil {
				b.Fatal(err)
			}
		}
		f, st, rawR, minR = fx, s, r, m
	}
	b.Run("ReadAll", func(b *testing.B) {
		setup(b)
		benchReadAll(b, f, st, rawR, minR)
	})
	b.Run("ReadStream", func(b *testing.B) {
		setup(b)
		benchReadStream(b, f, st, rawR, minR)
	})
	b.Run("Append100", func(b *testing.B) {
		setup(b)
		benchAppendLarge(b, f, st)
	})
}

// benchReadAll reads the whole log (f.events events) per op: the store's
// ReadAll producing envelope events against one raw SELECT of the same
// rows and columns into Go variables. Both are single passes over the
// whole log, interleaved: every benchReadChunk events the store's
// iteration pauses while the raw cursor reads the next benchReadChunk
// rows, so that load from other processes hits both sides alike (whole
// passes run one after the other gave ratios from 0.80 to 0.94 here).
//
// Memory: allocations and bytes allocated per event are each side's own
// (runtime.MemStats deltas around each chunk). The heap figures are the
// process's HeapInuse, both passes running: after a GC before the op
// (heap_before), the highest value seen at every switch between the
// sides (heap_peak, sampled every benchReadChunk events of each side),
// and at the end, before any GC (heap_after).
func benchReadAll(b *testing.B, f *benchFixture, st *store.Store, rawR *rawReader, minR *minReader) {
	ctx := context.Background()
	var sink int64
	rs, ss, ms := &benchSide{name: "raw"}, &benchSide{name: "store"}, &benchSide{name: "min"}
	var (
		mstats                          runtime.MemStats
		before, peak, after             uint64
		rawMallocs, rawBytes, stMallocs uint64
		stBytes, minMallocs, minBytes   uint64
		lastMallocs, lastBytes          uint64
	)
	// account attributes the allocations since the last switch to one
	// side and samples the heap (untimed).
	account := func(mallocs, bytes *uint64) {
		runtime.ReadMemStats(&mstats)
		*mallocs += mstats.Mallocs - lastMallocs
		*bytes += mstats.TotalAlloc - lastBytes
		lastMallocs, lastBytes = mstats.Mallocs, mstats.TotalAlloc
		peak = max(peak, mstats.HeapInuse)
	}
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		runtime.GC()
		runtime.ReadMemStats(&mstats)
		before = mstats.HeapInuse
		lastMallocs, lastBytes = mstats.Mallocs, mstats.TotalAlloc
		b.StartTimer()

		rows, err := rawR.all.QueryContext(rawCtx, 1, f.events)
		if err != nil {
			b.Fatal(err)
		}
		var w rawRow
		dest := w.dest()
		rawN := 0
		rawChunk := func() {
			t0 := time.Now()
			for i := 0; i < benchReadChunk && rows.Next(); i++ {
				if err := rows.Scan(dest...); err != nil {
					b.Fatal(err)
				}
				sink += w.position + int64(len(w.data))
				rawN++
			}
			rs.dur += time.Since(t0)
			account(&rawMallocs, &rawBytes)
		}
		mrows, err := minR.all.QueryContext(rawCtx, 1, f.events)
		if err != nil {
			b.Fatal(err)
		}
		var mw minRow
		mdest := mw.dest()
		minN := 0
		minChunk := func() {
			t0 := time.Now()
			for i := 0; i < benchReadChunk && mrows.Next(); i++ {
				if err := mrows.Scan(mdest...); err != nil {
					b.Fatal(err)
				}
				sink += mw.seq + int64(len(mw.data))
				minN++
			}
			ms.dur += time.Since(t0)
			account(&minMallocs, &minBytes)
		}
		stN := 0
		t0 := time.Now()
		for e, err := range st.ReadAll(ctx, store.ReadAllOptions{Limit: f.events}) {
			if err != nil {
				b.Fatal(err)
			}
			sink += e.Position + int64(len(e.Data))
			stN++
			if stN%benchReadChunk == 0 {
				ss.dur += time.Since(t0)
				account(&stMallocs, &stBytes)
				rawChunk()
				minChunk()
				t0 = time.Now()
			}
		}
		ss.dur += time.Since(t0)
		account(&stMallocs, &stBytes)
		for rawN < f.events && rows.Err() == nil {
			n := rawN
			rawChunk()
			if rawN == n {
				break
			}
		}
		for minN < f.events && mrows.Err() == nil {
			n := minN
			minChunk()
			if minN == n {
				break
			}
		}
		if err := rows.Close(); err != nil {
			b.Fatal(err)
		}
		if err := mrows.Close(); err != nil {
			b.Fatal(err)
		}
		after = mstats.HeapInuse
		if rawN != f.events || stN != f.events || minN != f.events {
			b.Fatalf("read %d raw, %d minimal and %d store events, want %d", rawN, minN, stN, f.events)
		}
		rs.ops++
		ss.ops++
		ms.ops++
	}
	b.StopTimer()
	reportPaired(b, float64(f.events), rs, ss, ms)
	mb := func(v uint64) float64 { return float64(v) / (1 << 20) }
	b.ReportMetric(mb(before), "heap_before_MB")
	b.ReportMetric(mb(peak), "heap_peak_MB")
	b.ReportMetric(mb(after), "heap_after_MB")
	evs := float64(b.N) * float64(f.events)
	b.ReportMetric(float64(stMallocs)/evs, "store_allocs/ev")
	b.ReportMetric(float64(stBytes)/evs, "store_B/ev")
	b.ReportMetric(float64(rawMallocs)/evs, "raw_allocs/ev")
	b.ReportMetric(float64(rawBytes)/evs, "raw_B/ev")
	b.ReportMetric(float64(minMallocs)/evs, "min_allocs/ev")
	b.ReportMetric(float64(minBytes)/evs, "min_B/ev")
	_ = sink
}

// benchReadChunk is how many events each side of benchReadAll reads
// before the other side's turn.
const benchReadChunk = 20_000

// benchReadStream reads a whole hot stream (f.hotLen events, spread over
// the file) per op: ReadStream against a raw SELECT of that stream.
func benchReadStream(b *testing.B, f *benchFixture, st *store.Store, rawR *rawReader, minR *minReader) {
	ctx := context.Background()
	var sink int64
	rs := &benchSide{name: "raw", run: func(k int) {
		for i := range k {
			n, err := rawR.scan(rawR.byStream, func(w *rawRow) {
				sink += w.version + int64(len(w.data))
			}, "acme", f.hot[i%len(f.hot)])
			if err != nil || n != f.hotLen {
				b.Fatalf("raw read %d events (%v), want %d", n, err, f.hotLen)
			}
		}
	}}
	ss := &benchSide{name: "store", run: func(k int) {
		for i := range k {
			n := 0
			for e, err := range st.ReadStream(ctx, "acme", f.hot[i%len(f.hot)], store.ReadStreamOptions{}) {
				if err != nil {
					b.Fatal(err)
				}
				sink += e.StreamVersion + int64(len(e.Data))
				n++
			}
			if n != f.hotLen {
				b.Fatalf("store read %d events, want %d", n, f.hotLen)
			}
		}
	}}
	ms := &benchSide{name: "min", run: func(k int) {
		for i := range k {
			rows, err := minR.byStream.QueryContext(rawCtx, f.hot[i%len(f.hot)])
			if err != nil {
				b.Fatal(err)
			}
			var w minRow
			dest := w.dest()
			n := 0
			for rows.Next() {
				if err := rows.Scan(dest...); err != nil {
					b.Fatal(err)
				}
				sink += w.version + int64(len(w.data))
				n++
			}
			if err := rows.Close(); err != nil || n != f.hotLen {
				b.Fatalf("minimal read %d events (%v), want %d", n, err, f.hotLen)
			}
		}
	}}
	runPaired(b, len(f.hot), nil, rs, ss, ms)
	reportPaired(b, float64(f.hotLen), rs, ss, ms)
	_ = sink
}

// benchAppendLarge appends 100 events per transaction to random existing
// streams of the 1M-event file, against the same appends into a fresh
// file, both through the store at FULL: x_fresh = 1M rate / fresh rate.
func benchAppendLarge(b *testing.B, f *benchFixture, big *store.Store) {
	ctx := context.Background()
	fresh := openBenchStore(b, filepath.Join(b.TempDir(), "fresh.db"), "FULL")
	g := newBenchGen(4)
	rng := rand.New(rand.NewPCG(5, 5))
	type op struct {
		tenant, stream string
		evs            []envelope.Event
	}
	var ops []op
	prep := func(k int) {
		ops = ops[:0]
		for range k {
			t, s := f.regularStream(rng.IntN(f.regular))
			ops = append(ops, op{t, s, benchEnvelopes(g.raw(100))})
		}
	}
	side := func(name string, s *store.Store) *benchSide {
		bs := &benchSide{name: name}
		bs.run = func(k int) {
			for _, o := range ops[:k] {
				t0 := time.Now()
				if _, err := s.Append(ctx, o.tenant, o.stream, store.Any, o.evs...); err != nil {
					b.Fatal(err)
				}
				bs.lat = append(bs.lat, time.Since(t0))
			}
		}
		return bs
	}
	fs, bs := side("fresh", fresh), side("1m", big)
	runPaired(b, 5, prep, fs, bs)
	for _, s := range []*benchSide{fs, bs} {
		b.ReportMetric(s.rate(100), s.name+"_ev/s")
	}
	if r := fs.rate(100); r > 0 {
		b.ReportMetric(bs.rate(100)/r, "x_fresh")
	}
	if bs.ops > 0 {
		b.ReportMetric(float64(bs.dur.Nanoseconds())/float64(bs.ops), "ns/op")
	}
	reportLatency(b, "", bs.lat)
}

// BenchmarkCommitFrames counts the pages a one-event append's commit
// writes to the WAL (each a frame: a header and a page, two writes), for
// the store's schema (the raw baseline, which writes the store's tables
// and indexes with the store's statements' effect) and for the minimal
// table, and which b-tree each page belongs to. At synchronous=NORMAL a
// commit does not wait for the disk, and these writes are most of its
// cost. Metrics: raw_frames/tx and min_frames/tx, and raw_<b-tree>/tx.
func BenchmarkCommitFrames(b *testing.B) {
	dir := b.TempDir()
	g := newBenchGen(7)
	type writer interface {
		appendTx(tenant, stream string, evs []rawEvent) error
		Close() error
	}
	count := func(name string, open func() (writer, *sql.Conn, error)) (map[string]float64, float64) {
		path := filepath.Join(dir, name+".db")
		w, c, err := open()
		if err != nil {
			b.Fatal(err)
		}
		// Fill the file a little first: the tables and indexes past their
		// first page, as in a file in use.
		for i := range 2000 {
			if err := w.appendTx("acme", fmt.Sprintf("order-%03d", i%100), g.raw(1)); err != nil {
				b.Fatal(err)
			}
		}
		// Keep every frame of the measured commits in the WAL.
		for _, q := range []string{"PRAGMA wal_checkpoint(TRUNCATE)", "PRAGMA wal_autocheckpoint=0"} {
			if _, err := c.ExecContext(rawCtx, q); err != nil {
				b.Fatal(err)
			}
		}
		b.StartTimer()
		for i := range b.N {
			if err := w.appendTx("acme", fmt.Sprintf("order-%03d", i%100), g.raw(1)); err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		wal, err := os.ReadFile(path + "-wal")
		if err != nil {
			b.Fatal(err)
		}
		owner := map[uint32]string{}
		rows, err := c.QueryContext(rawCtx, `SELECT name, pageno FROM dbstat`)
		if err != nil {
			b.Fatal(err)
		}
		for rows.Next() {
			var nm string
			var pg uint32
			if err := rows.Scan(&nm, &pg); err != nil {
				b.Fatal(err)
			}
			owner[pg] = nm
		}
		if err := rows.Close(); err != nil {
			b.Fatal(err)
		}
		by := map[string]float64{}
		frames := 0
		const walHeader, frameHeader, page = 32, 24, 4096
		for off := walHeader; off+frameHeader+page <= len(wal); off += frameHeader + page {
			pg := uint32(wal[off])<<24 | uint32(wal[off+1])<<16 | uint32(wal[off+2])<<8 | uint32(wal[off+3])
			nm := owner[pg]
			if pg == 1 {
				nm = "header"
			}
			by[nm] += 1 / float64(b.N)
			frames++
		}
		if err := w.Close(); err != nil {
			b.Fatal(err)
		}
		return by, float64(frames) / float64(b.N)
	}
	b.StopTimer()
	_, minFrames := count("min", func() (writer, *sql.Conn, error) {
		m, err := newMinDB(filepath.Join(dir, "min.db"), "NORMAL")
		if err != nil {
			return nil, nil, err
		}
		return m, m.conn, nil
	})
	rawBy, rawFrames := count("raw", func() (writer, *sql.Conn, error) {
		r, err := newRawDB(filepath.Join(dir, "raw.db"), "NORMAL")
		if err != nil {
			return nil, nil, err
		}
		return r, r.conn, nil
	})
	b.ReportMetric(minFrames, "min_frames/tx")
	b.ReportMetric(rawFrames, "raw_frames/tx")
	for nm, v := range rawBy {
		b.ReportMetric(v, "raw_"+nm+"/tx")
	}
}
