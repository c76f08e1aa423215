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
// BenchmarkTypedCatchUp: over the same 1,000,000-event log, in the same
// run, alternately: an untyped runner with a no-op Apply, a typed one
// with no-op handlers (the registry decodes each event's data into its Go
// type), and an untyped one decoding by hand (envelope.DecodeData). All
// read the same four types. x_untyped = typed rate / untyped rate: the
// decode cost is the difference; x_hand = typed rate / hand-decoding rate.
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

	fixtureOnce sync.Once
	fixturePath string
	fixtureErr  error
)

const fixtureEvents = 1_000_000

// catchUpFixture builds a 1M-event file once per benchmark binary, with
// raw inserts in large transactions.
func catchUpFixture(b *testing.B) string {
	fixtureOnce.Do(func() {
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
		for start := 0; start < fixtureEvents; start += 50_000 {
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
			if _, err := tx.Exec(`INSERT INTO streams (tenant, stream_id, version, created_at, updated_at)
				SELECT tenant, stream_id, MAX(version), ?, ? FROM events WHERE position > ? GROUP BY tenant, stream_id
				ON CONFLICT (tenant, stream_id) DO UPDATE SET version = excluded.version`, now, now, start); err != nil {
				fixtureErr = err
				return
			}
			if err := tx.Commit(); err != nil {
				fixtureErr = err
				return
			}
		}
	})
	if fixtureErr != nil {
		b.Fatal(fixtureErr)
	}
	return fixturePath
}

func TestMain(m *testing.M) {
	code := m.Run()
	if fixturePath != "" {
		os.RemoveAll(filepath.Dir(fixturePath))
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
		content_type, data_schema, data, correlation_id, causation_id, extensions FROM events WHERE position > ? ORDER BY position LIMIT 500`)
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
			var ext []byte
			if err := rows.Scan(&e.Position, &e.Tenant, &e.Stream, &e.StreamVersion, &e.ID, &e.Type, &e.Source, &t,
				&e.DataContentType, &e.DataSchema, &e.Data, &e.CorrelationID, &e.CausationID, &ext); err != nil {
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

func BenchmarkTypedCatchUp(b *testing.B) {
	path := catchUpFixture(b)
	ctx := context.Background()
	s, err := store.Open(ctx, path, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	catchUp := func(p projection.Projection) time.Duration {
		r, err := projection.NewRunner(s, p, &projection.RunnerOptions{BatchSize: 500})
		if err != nil {
			b.Fatal(err)
		}
		t0 := time.Now()
		if cp, err := r.CatchUp(ctx); err != nil || cp != fixtureEvents {
			b.Fatalf("%s: CatchUp = %d, %v", p.Name, cp, err)
		}
		return time.Since(t0)
	}
	var untypedT, typedT, handT time.Duration
	i := 0
	b.ResetTimer()
	for b.Loop() {
		i++
		run := runs.Add(1)
		untypedT += catchUp(projection.Projection{Name: fmt.Sprintf("untyped_%d", run), Types: benchTypes,
			Apply: func(context.Context, *projection.Tx, envelope.Event) error { return nil }})
		typedT += catchUp(benchTyped(fmt.Sprintf("typed_%d", run)))
		handT += catchUp(projection.Projection{Name: fmt.Sprintf("hand_%d", run), Types: benchTypes,
			Apply: func(_ context.Context, _ *projection.Tx, e envelope.Event) error {
				_, err := envelope.DecodeData[benchOrder](e)
				return err
			}})
	}
	events := float64(fixtureEvents) * float64(i)
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
