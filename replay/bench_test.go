package replay_test

// BenchmarkRebuildCatalog: a rebuild of the built-in catalog projection
// over a 1,000,000-event log against a raw scan of the same rows, in the
// same run, alternately, on the same file. x_raw = rebuild rate / raw
// scan rate. Memory is measured with runtime.MemStats: HeapInuse after a
// GC before each side, then sampled every 50,000 events during it; the
// peak over the first and the second half of the log shows whether it
// stays flat as the rebuild goes on. See BENCHMARKS.md ("Replay").
//
// The file is built once per benchmark binary with raw SQL in large
// transactions (as store/bench_test.go builds its 1M-event file), in a
// temp dir removed when the binary is done (TestMain). EVENTLITE_REPLAY_FIXTURE=
// /some/file.db builds it there once and reuses it (never removed).

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/eventlite/eventlite/projection"
	"github.com/eventlite/eventlite/replay"
	"github.com/eventlite/eventlite/store"
)

const benchEvents = 1_000_000

var benchTypes = []string{"order.placed", "order.item_added", "order.paid", "order.shipped"}

// benchPayloads makes a pool of 200-300 byte JSON payloads with spaces in
// their strings, as real data has.
func benchPayloads(rng *rand.Rand) [][]byte {
	names := []string{"Ada Lovelace", "Grace Hopper", "Edsger Dijkstra", "Barbara Liskov", "Ken Thompson"}
	products := []string{"Espresso beans 1kg", "Ceramic mug", "Burr grinder", "Paper filters x100", "Milk jug"}
	var out [][]byte
	for i := range 1024 {
		items := []map[string]any{}
		for range 1 + rng.IntN(2) {
			items = append(items, map[string]any{"sku": fmt.Sprintf("SKU-%05d", rng.IntN(1e5)), "name": products[rng.IntN(len(products))],
				"qty": 1 + rng.IntN(3), "priceCents": 200 + rng.IntN(5000)})
		}
		b, _ := json.Marshal(map[string]any{"orderId": fmt.Sprintf("ord_%06d", i), "customerId": fmt.Sprintf("cus_%08d", rng.IntN(1e8)),
			"customer": names[rng.IntN(len(names))], "items": items, "currency": "EUR", "note": "leave at the door"})
		out = append(out, b)
	}
	return out
}

// buildBenchFixture writes n events: 1 in 100 to 10 hot streams, the rest
// to streams of 10 events, 100 interleaved at a time, over two tenants;
// a stream's first event is order.placed, the rest of random types.
func buildBenchFixture(path string, n int) error {
	s, err := store.Open(context.Background(), path, nil) // the schema
	if err != nil {
		return err
	}
	head, err := s.Head(context.Background())
	if cerr := s.Close(); err == nil {
		err = cerr
	}
	if err != nil || head >= int64(n) {
		return err // or reused
	}
	if head > 0 {
		return fmt.Errorf("%s holds %d events, want 0 or at least %d", path, head, n)
	}
	p := strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(filepath.ToSlash(path))
	db, err := sql.Open("sqlite", "file:"+p+"?_pragma=synchronous(OFF)&_pragma=foreign_keys(1)&_txlock=immediate")
	if err != nil {
		return err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	ctx := context.Background()
	c, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	insEvent, err := c.PrepareContext(ctx, `INSERT INTO events (tenant, stream_id, version, event_id, type, source, time,
		content_type, attrs, data, recorded_at)
		VALUES (?, ?, ?, ?, ?, '/bench', ?, 'application/json', NULL, ?, ?)`)
	if err != nil {
		return err
	}
	defer insEvent.Close()
	insOutbox, err := c.PrepareContext(ctx, `INSERT INTO outbox (position, attempts, published_at) VALUES (?, 1, ?)`)
	if err != nil {
		return err
	}
	defer insOutbox.Close()
	insStream, err := c.PrepareContext(ctx, `INSERT INTO streams (tenant, stream_id, created_at) VALUES (?, ?, ?)`)
	if err != nil {
		return err
	}
	defer insStream.Close()
	rng := rand.New(rand.NewPCG(11, 11))
	payloads := benchPayloads(rng)
	type st struct {
		tenant, stream   string
		version, created int64
	}
	streams := map[string]*st{}
	var order []*st
	get := func(tenant, stream string) *st {
		k := tenant + "/" + stream
		if s := streams[k]; s != nil {
			return s
		}
		s := &st{tenant: tenant, stream: stream}
		streams[k] = s
		order = append(order, s)
		return s
	}
	exec := func(q string) error { _, err := c.ExecContext(ctx, q); return err }
	start := time.Now().Add(-30 * 24 * time.Hour).UnixNano()
	step := int64(30*24*time.Hour) / int64(n)
	if err := exec("BEGIN IMMEDIATE"); err != nil {
		return err
	}
	j := 0
	for i := range n {
		var s *st
		if i%100 == 50 {
			s = get("acme", fmt.Sprintf("hot-%02d", (i/100)%10))
		} else {
			idx := (j/1000)*100 + j%100
			j++
			s = get([]string{"acme", "globex"}[idx%2], fmt.Sprintf("order-%06d", idx))
		}
		t := start + int64(i)*step
		s.version++
		if s.version == 1 {
			s.created = t
		}
		typ := benchTypes[0]
		if s.version > 1 {
			typ = benchTypes[1+rng.IntN(len(benchTypes)-1)]
		}
		res, err := insEvent.ExecContext(ctx, s.tenant, s.stream, s.version, ulid.Make().String(), typ, t, payloads[rng.IntN(len(payloads))], t)
		if err != nil {
			return err
		}
		pos, _ := res.LastInsertId()
		if _, err := insOutbox.ExecContext(ctx, pos, t); err != nil {
			return err
		}
		if (i+1)%100_000 == 0 {
			if err := exec("COMMIT"); err != nil {
				return err
			}
			if err := exec("BEGIN IMMEDIATE"); err != nil {
				return err
			}
		}
	}
	for _, s := range order {
		if _, err := insStream.ExecContext(ctx, s.tenant, s.stream, s.created); err != nil {
			return err
		}
	}
	if err := exec("COMMIT"); err != nil {
		return err
	}
	return exec("PRAGMA wal_checkpoint(TRUNCATE)")
}

// benchHeap samples HeapInuse: before (after a GC), and the peaks over
// the first and second half of the log.
type benchHeap struct {
	before, peak1, peak2 uint64
	half                 int64
	next                 int64
}

func (h *benchHeap) start(total int64) {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	*h = benchHeap{before: ms.HeapInuse, half: total / 2, next: 0}
}

// sample reads the heap when done passed the next 50,000-event mark.
func (h *benchHeap) sample(done int64) {
	if done < h.next {
		return
	}
	h.next = done + 50_000
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	if done < h.half {
		h.peak1 = max(h.peak1, ms.HeapInuse)
	} else {
		h.peak2 = max(h.peak2, ms.HeapInuse)
	}
}

var (
	fixtureOnce sync.Once
	fixturePath string
	fixtureDir  string // removed by TestMain
	fixtureErr  error
)

// TestMain removes the benchmark's file when the binary is done.
func TestMain(m *testing.M) {
	code := m.Run()
	if fixtureDir != "" {
		_ = os.RemoveAll(fixtureDir)
	}
	os.Exit(code)
}

// benchFixturePath builds the 1M-event file once per binary.
func benchFixturePath(b *testing.B) string {
	fixtureOnce.Do(func() {
		fixturePath = os.Getenv("EVENTLITE_REPLAY_FIXTURE")
		if fixturePath == "" {
			if fixtureDir, fixtureErr = os.MkdirTemp("", "eventlite-replay-bench-"); fixtureErr != nil {
				return
			}
			fixturePath = filepath.Join(fixtureDir, "1m.db")
		}
		t0 := time.Now()
		if fixtureErr = buildBenchFixture(fixturePath, benchEvents); fixtureErr == nil {
			b.Logf("fixture %s: %d events, ready in %v", fixturePath, benchEvents, time.Since(t0).Round(time.Millisecond))
		}
	})
	if fixtureErr != nil {
		b.Fatalf("build the fixture: %v", fixtureErr)
	}
	return fixturePath
}

func BenchmarkRebuildCatalog(b *testing.B) {
	if testing.Short() {
		b.Skip("builds a 1,000,000-event file")
	}
	ctx := context.Background()
	path := benchFixturePath(b)
	s, err := store.Open(ctx, path, nil) // the defaults: synchronous=FULL
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	p := strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(filepath.ToSlash(path))
	rdb, err := sql.Open("sqlite", "file:"+p+"?_pragma=mmap_size(0)")
	if err != nil {
		b.Fatal(err)
	}
	defer rdb.Close()

	var rawDur, rbDur time.Duration
	var rawHeap, rbHeap benchHeap
	var rawPeak1, rawPeak2, rbPeak1, rbPeak2, rbBefore uint64
	var sink int64
	rawScan := func() int64 {
		rows, err := rdb.QueryContext(ctx, `SELECT position, tenant, stream_id, version, event_id, type, source, time,
			content_type, data, attrs FROM events WHERE position >= ? ORDER BY position LIMIT ?`, 1, benchEvents)
		if err != nil {
			b.Fatal(err)
		}
		defer rows.Close()
		var (
			pos, ver, tm                     int64
			tenant, stream, id, typ, src, ct string
			data, attrs                      []byte
		)
		dest := []any{&pos, &tenant, &stream, &ver, &id, &typ, &src, &tm, &ct, &data, &attrs}
		var n int64
		for rows.Next() {
			if err := rows.Scan(dest...); err != nil {
				b.Fatal(err)
			}
			sink += pos + int64(len(data))
			n++
			rawHeap.sample(n)
		}
		if err := rows.Err(); err != nil {
			b.Fatal(err)
		}
		return n
	}
	rebuild := func() int64 {
		res, err := replay.Rebuild(ctx, s, projection.Catalog(), &replay.Options{FromScratch: true, Progress: func(pr replay.Progress) {
			rbHeap.sample(pr.Done)
		}})
		if err != nil {
			b.Fatal(err)
		}
		return res.AppliedNow
	}
	b.ResetTimer()
	for op := range b.N {
		for side := range 2 {
			if (op+side)%2 == 0 {
				rawHeap.start(benchEvents)
				t := time.Now()
				n := rawScan()
				rawDur += time.Since(t)
				rawPeak1, rawPeak2 = max(rawPeak1, rawHeap.peak1), max(rawPeak2, rawHeap.peak2)
				if n != benchEvents {
					b.Fatalf("raw scan read %d rows, want %d", n, benchEvents)
				}
			} else {
				rbHeap.start(benchEvents)
				rbBefore = max(rbBefore, rbHeap.before)
				t := time.Now()
				n := rebuild()
				rbDur += time.Since(t)
				rbPeak1, rbPeak2 = max(rbPeak1, rbHeap.peak1), max(rbPeak2, rbHeap.peak2)
				if n != benchEvents {
					b.Fatalf("rebuild applied %d events, want %d", n, benchEvents)
				}
			}
		}
	}
	b.StopTimer()
	rate := func(d time.Duration) float64 { return float64(b.N) * benchEvents / d.Seconds() }
	mb := func(v uint64) float64 { return float64(v) / (1 << 20) }
	b.ReportMetric(rate(rawDur), "raw_ev/s")
	b.ReportMetric(rate(rbDur), "rebuild_ev/s")
	b.ReportMetric(rate(rbDur)/rate(rawDur), "x_raw")
	b.ReportMetric(float64(rbDur.Nanoseconds())/float64(b.N), "ns/op")
	b.ReportMetric(mb(rbBefore), "heap_before_MB")
	b.ReportMetric(mb(rbPeak1), "heap_peak_1st_half_MB")
	b.ReportMetric(mb(rbPeak2), "heap_peak_2nd_half_MB")
	b.ReportMetric(mb(max(rawPeak1, rawPeak2)), "raw_heap_peak_MB")
	_ = sink
	var catalog int
	if err := projection.ReadCatalog(ctx, s, "", func(projection.CatalogEntry) error { catalog++; return nil }); err != nil {
		b.Fatal(err)
	}
	if catalog == 0 {
		b.Fatal("the catalog is empty after the rebuild")
	}
}
