package projection_test

// Benchmarks of local projections; figures in BENCHMARKS.md
// ("Projections").
//
// BenchmarkCatchUp: a runner with a no-op handler catching up over a
// 1,000,000-event log, against a raw loop in the same run on the same
// file (read a page of 500 by position, the same columns; update a
// checkpoint row; commit per page). x_raw = runner rate / raw rate. The
// catalog projection's rate is reported beside it.
//
// BenchmarkTypedCatchUp: over the same 200,000-event log (the catch-up
// fixture's events), in the same run, interleaved (three rounds per
// iteration, each starting with the next form): an untyped runner with a
// no-op Apply, a typed one with no-op handlers (the registry decodes each
// event's data into its Go type), and an untyped one decoding by hand
// (envelope.DecodeData). All read the same four types. x_untyped = typed
// rate / untyped rate: the decode cost is the difference; x_hand = typed
// rate / hand-decoding rate.
//
// BenchmarkLiveLag: appends at a steady 2,000 events/s (FULL sync) while a
// runner follows; the lag is from the event's time (set at append) to its
// application, p50/p99/max.

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/projection"
	"github.com/eventlite/eventlite/store"
)

var (
	// runs names each catch-up's projection afresh across -count runs;
	// catalogDone: the catalog is measured once per binary (its name is
	// fixed).
	runs        atomic.Int64
	catalogDone atomic.Bool

	fixturesMu sync.Mutex
	fixtures   = map[int]*logFixture{} // by size
)

const fixtureEvents = 1_000_000

type logFixture struct {
	once sync.Once
	path string
	err  error
}

// catchUpFixture builds a 1M-event file once per benchmark binary.
func catchUpFixture(b *testing.B) string { return fixtureOf(b, fixtureEvents) }

// fixtureOf builds an n-event file (n a multiple of 50,000) once per
// benchmark binary, with raw inserts in large transactions.
func fixtureOf(b *testing.B, n int) string {
	fixturesMu.Lock()
	f := fixtures[n]
	if f == nil {
		f = &logFixture{}
		fixtures[n] = f
	}
	fixturesMu.Unlock()
	f.once.Do(func() { f.path, f.err = buildFixture(n) })
	if f.err != nil {
		b.Fatal(f.err)
	}
	return f.path
}

func buildFixture(events int) (fixturePath string, fixtureErr error) {
	dir, err := os.MkdirTemp("", "eventlite-projection-bench")
	if err != nil {
		fixtureErr = err
		return
	}
	fixturePath = filepath.Join(dir, "log.db")
	s, err := store.Open(context.Background(), fixturePath, nil)
	if err != nil {
		fixtureErr = err
		return
	}
	s.Close()
	db, err := sql.Open("sqlite", "file:"+fixturePath+"?_pragma=synchronous(OFF)&_txlock=immediate")
	if err != nil {
		fixtureErr = err
		return
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	data := []byte(`{"orderId":"ord_000123","customerId":"cus_00004567","customer":"Grace Hopper","items":[{"sku":"SKU-00042","name":"Ceramic mug","qty":2,"priceCents":1450}],"currency":"EUR","note":"leave at the door"}`)
	types := []string{"order.placed", "order.item_added", "order.paid", "order.shipped"}
	now := time.Now().UnixNano()
	for start := 0; start < events; start += 50_000 {
		tx, err := db.Begin()
		if err != nil {
			fixtureErr = err
			return
		}
		ins, _ := tx.Prepare(`INSERT INTO events (tenant, stream_id, version, event_id, type, source, time, content_type, data, recorded_at)
			VALUES ('default', ?, ?, ?, ?, '/bench', ?, 'application/json', ?, ?)`)
		out, _ := tx.Prepare(`INSERT INTO outbox (position, published_at) VALUES (?, ?)`)
		for i := start; i < start+50_000; i++ {
			stream := fmt.Sprintf("order-%06d", i/10)
			res, err := ins.Exec(stream, i%10+1, ulid.Make().String(), types[i%4], now, data, now)
			if err != nil {
				fixtureErr = err
				return
			}
			pos, _ := res.LastInsertId()
			if _, err := out.Exec(pos, now); err != nil {
				fixtureErr = err
				return
			}
		}
		if _, err := tx.Exec(`INSERT INTO streams (tenant, stream_id, created_at)
			SELECT tenant, stream_id, ? FROM events WHERE position > ? GROUP BY tenant, stream_id
			ON CONFLICT (tenant, stream_id) DO NOTHING`, now, start); err != nil {
			fixtureErr = err
			return
		}
		if err := tx.Commit(); err != nil {
			fixtureErr = err
			return
		}
	}
	return fixturePath, fixtureErr
}

func TestMain(m *testing.M) {
	code := m.Run()
	for _, f := range fixtures {
		if f.path != "" {
			os.RemoveAll(filepath.Dir(f.path))
		}
	}
	os.Exit(code)
}

// rawCatchUp is the baseline loop: read a page of 500 by position (the
// columns a projection gets), move a checkpoint row, commit per page.
func rawCatchUp(b *testing.B, path, name string) int {
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)&_pragma=synchronous(FULL)&_txlock=immediate")
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(2)
	if _, err := db.Exec(`CREATE TABLE IF NOT EXISTS raw_checkpoints (name TEXT PRIMARY KEY, position INTEGER)`); err != nil {
		b.Fatal(err)
	}
	read, err := db.Prepare(`SELECT position, tenant, stream_id, version, event_id, type, source, time,
		content_type, data, attrs FROM events WHERE position > ? ORDER BY position LIMIT 500`)
	if err != nil {
		b.Fatal(err)
	}
	defer read.Close()
	var cp int64
	n := 0
	for {
		rows, err := read.Query(cp)
		if err != nil {
			b.Fatal(err)
		}
		got := 0
		for rows.Next() {
			var e envelope.Event
			var t int64
			var attrs []byte
			if err := rows.Scan(&e.Position, &e.Tenant, &e.Stream, &e.StreamVersion, &e.ID, &e.Type, &e.Source, &t,
				&e.DataContentType, &e.Data, &attrs); err != nil {
				b.Fatal(err)
			}
			e.Time = time.Unix(0, t)
			cp = e.Position
			got++
		}
		rows.Close()
		if got == 0 {
			return n
		}
		n += got
		tx, err := db.Begin()
		if err != nil {
			b.Fatal(err)
		}
		if _, err := tx.Exec(`INSERT INTO raw_checkpoints (name, position) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET position = excluded.position`, name, cp); err != nil {
			b.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCatchUp(b *testing.B) {
	path := catchUpFixture(b)
	ctx := context.Background()
	s, err := store.Open(ctx, path, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	var rawT, runT, catT time.Duration
	i := 0
	b.ResetTimer()
	for b.Loop() {
		i++
		run := runs.Add(1)
		t0 := time.Now()
		if n := rawCatchUp(b, path, fmt.Sprintf("raw_%d", run)); n != fixtureEvents {
			b.Fatalf("raw loop read %d events", n)
		}
		t1 := time.Now()
		p := projection.Projection{Name: fmt.Sprintf("noop_%d", run), Apply: func(context.Context, *projection.Tx, envelope.Event) error { return nil }}
		r, err := projection.NewRunner(s, p, &projection.RunnerOptions{BatchSize: 500})
		if err != nil {
			b.Fatal(err)
		}
		if cp, err := r.CatchUp(ctx); err != nil || cp != fixtureEvents {
			b.Fatalf("CatchUp = %d, %v", cp, err)
		}
		t2 := time.Now()
		rawT += t1.Sub(t0)
		runT += t2.Sub(t1)
		if catalogDone.CompareAndSwap(false, true) {
			// The catalog, once: its rate beside the no-op's.
			cat := projection.Catalog()
			r, err := projection.NewRunner(s, cat, &projection.RunnerOptions{BatchSize: 500})
			if err != nil {
				b.Fatal(err)
			}
			t3 := time.Now()
			if _, err := r.CatchUp(ctx); err != nil {
				b.Fatal(err)
			}
			catT = time.Since(t3)
		}
	}
	events := float64(fixtureEvents) * float64(i)
	b.ReportMetric(events/runT.Seconds(), "events/s")
	b.ReportMetric(events/rawT.Seconds(), "raw_events/s")
	b.ReportMetric(rawT.Seconds()/runT.Seconds(), "x_raw")
	if catT > 0 {
		b.ReportMetric(fixtureEvents/catT.Seconds(), "catalog_events/s")
	}
}

// The fixture's data, one Go type per event type (a Go type registered
// under several event types is ambiguous to On).
type (
	benchItem struct {
		SKU        string `json:"sku"`
		Name       string `json:"name"`
		Qty        int    `json:"qty"`
		PriceCents int64  `json:"priceCents"`
	}
	benchOrder struct {
		OrderID    string      `json:"orderId"`
		CustomerID string      `json:"customerId"`
		Customer   string      `json:"customer"`
		Items      []benchItem `json:"items"`
		Currency   string      `json:"currency"`
		Note       string      `json:"note"`
	}
	benchPlaced    benchOrder
	benchItemAdded benchOrder
	benchPaid      benchOrder
	benchShipped   benchOrder
)

var benchTypes = []string{"order.placed", "order.item_added", "order.paid", "order.shipped"}

func benchTyped(name string) projection.Projection {
	var reg envelope.Registry
	envelope.Register[benchPlaced](&reg, "order.placed")
	envelope.Register[benchItemAdded](&reg, "order.item_added")
	envelope.Register[benchPaid](&reg, "order.paid")
	envelope.Register[benchShipped](&reg, "order.shipped")
	h := projection.NewHandlers(&reg)
	projection.On(h, func(context.Context, *projection.Tx, projection.Event[benchPlaced]) error { return nil })
	projection.On(h, func(context.Context, *projection.Tx, projection.Event[benchItemAdded]) error { return nil })
	projection.On(h, func(context.Context, *projection.Tx, projection.Event[benchPaid]) error { return nil })
	projection.On(h, func(context.Context, *projection.Tx, projection.Event[benchShipped]) error { return nil })
	return projection.Projection{Name: name, Handlers: h}
}

// typedFixtureEvents: BenchmarkTypedCatchUp interleaves short catch-ups,
// so that the three forms meet the same load on a busy machine.
const typedFixtureEvents = 200_000

func BenchmarkTypedCatchUp(b *testing.B) {
	path := fixtureOf(b, typedFixtureEvents)
	ctx := context.Background()
	s, err := store.Open(ctx, path, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	forms := []struct {
		name string
		make func(name string) projection.Projection
		took time.Duration
	}{
		{"untyped", func(name string) projection.Projection {
			return projection.Projection{Name: name, Types: benchTypes,
				Apply: func(context.Context, *projection.Tx, envelope.Event) error { return nil }}
		}, 0},
		{"typed", benchTyped, 0},
		{"hand", func(name string) projection.Projection {
			return projection.Projection{Name: name, Types: benchTypes,
				Apply: func(_ context.Context, _ *projection.Tx, e envelope.Event) error {
					_, err := envelope.DecodeData[benchOrder](e)
					return err
				}}
		}, 0},
	}
	const rounds = 3 // per iteration, each starting with the next form
	i := 0
	b.ResetTimer()
	for b.Loop() {
		i++
		for round := range rounds {
			run := runs.Add(1)
			for k := range forms {
				f := &forms[(round+k)%len(forms)]
				r, err := projection.NewRunner(s, f.make(fmt.Sprintf("%s_%d", f.name, run)), &projection.RunnerOptions{BatchSize: 500})
				if err != nil {
					b.Fatal(err)
				}
				t0 := time.Now()
				if cp, err := r.CatchUp(ctx); err != nil || cp != typedFixtureEvents {
					b.Fatalf("%s: CatchUp = %d, %v", f.name, cp, err)
				}
				f.took += time.Since(t0)
			}
		}
	}
	untypedT, typedT, handT := forms[0].took, forms[1].took, forms[2].took
	events := float64(typedFixtureEvents) * float64(i*rounds)
	b.ReportMetric(events/typedT.Seconds(), "events/s")
	b.ReportMetric(events/untypedT.Seconds(), "untyped_events/s")
	b.ReportMetric(events/handT.Seconds(), "hand_events/s")
	b.ReportMetric(untypedT.Seconds()/typedT.Seconds(), "x_untyped")
	b.ReportMetric(handT.Seconds()/typedT.Seconds(), "x_hand")
}

func BenchmarkLiveLag(b *testing.B) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s, err := store.Open(ctx, filepath.Join(b.TempDir(), "live.db"), nil) // FULL
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	var mu sync.Mutex
	var lags []time.Duration
	p := projection.Projection{Name: "lag", Apply: func(_ context.Context, _ *projection.Tx, e envelope.Event) error {
		mu.Lock()
		lags = append(lags, time.Since(e.Time))
		mu.Unlock()
		return nil
	}}
	r, err := projection.NewRunner(s, p, nil)
	if err != nil {
		b.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	const rate = 2000
	perRound := 3 * rate // three seconds a round
	b.ResetTimer()
	var last int64
	for b.Loop() {
		tick := time.NewTicker(time.Second / rate)
		for i := range perRound {
			<-tick.C
			e, _ := envelope.New("t", map[string]int{"i": i})
			e.Source = "/bench"
			res, err := s.Append(ctx, "default", fmt.Sprintf("s-%d", i%100), store.Any, e)
			if err != nil {
				b.Fatal(err)
			}
			last = res.LastPosition()
		}
		tick.Stop()
	}
	wctx, wcancel := context.WithTimeout(ctx, time.Minute)
	defer wcancel()
	if err := projection.WaitFor(wctx, s, "lag", last); err != nil {
		b.Fatal(err)
	}
	cancel()
	<-done
	mu.Lock()
	defer mu.Unlock()
	slices.Sort(lags)
	pct := func(q float64) float64 { return float64(lags[int(q*float64(len(lags)-1))]) / float64(time.Millisecond) }
	b.ReportMetric(pct(0.5), "p50_ms")
	b.ReportMetric(pct(0.99), "p99_ms")
	b.ReportMetric(pct(1), "max_ms")
}
