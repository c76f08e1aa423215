package publish_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/natsjs"
	"github.com/eventlite/eventlite/natsjs/natstest"
	"github.com/eventlite/eventlite/publish"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/outbox"
)

// benchEvents is how many events one round of BenchmarkRelay drains.
const benchEvents = 20_000

// benchData is an event's data: about 300 bytes of JSON.
var benchData = []byte(`{"order":"ord-000000","customer":"cust-000000","lines":[{"sku":"sku-1","qty":2,"price":1999},{"sku":"sku-2","qty":1,"price":4999}],"currency":"EUR","note":"` + strings.Repeat("x", 150) + `"}`)

// fillStore appends n events over 100 streams and two tenants, 100 per
// append.
func fillStore(b *testing.B, s *store.Store, n int) {
	b.Helper()
	ctx := context.Background()
	evs := make([]envelope.Event, 100)
	for i := 0; i < n; i += len(evs) {
		for j := range evs {
			evs[j] = envelope.Event{Type: "order.placed", Source: "/bench", Data: benchData, DataContentType: "application/json"}
		}
		tenant := []string{"default", "acme"}[i/100%2]
		if _, err := s.Append(ctx, tenant, fmt.Sprint("order-", i/100%100), store.Any, evs...); err != nil {
			b.Fatal(err)
		}
	}
}

// rawDB opens the store's file with plain database/sql, as the raw
// baseline's own connection.
func rawDB(b *testing.B, path string) *sql.DB {
	b.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)&_pragma=synchronous(FULL)&_txlock=immediate")
	if err != nil {
		b.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	b.Cleanup(func() { db.Close() })
	return db
}

// resetRound makes every event pending again and gives the broker a fresh
// stream (a new dedupe window), outside the timed region.
func resetRound(b *testing.B, db *sql.DB, js jetstream.JetStream) {
	b.Helper()
	ctx := context.Background()
	if _, err := db.Exec(`DELETE FROM outbox`); err != nil {
		b.Fatal(err)
	}
	if _, err := db.Exec(`UPDATE outbox_watermark SET settled = 0, scanned = 0`); err != nil {
		b.Fatal(err)
	}
	_ = js.DeleteStream(ctx, natsjs.DefaultStream)
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: natsjs.DefaultStream, Subjects: []string{"eventlite.>", "raw.>"},
		Storage: jetstream.FileStorage, Duplicates: natsjs.DuplicateWindow}); err != nil {
		b.Fatal(err)
	}
}

// rawRound is the baseline: read the pending events above the outbox's
// watermark in batches of 1,024, publish each batch with nats.go's async
// JetStream publishing (all 1,024 in flight, a Nats-Msg-Id each), await
// the acks, and mark the batch published with a prepared INSERT per row
// and the watermark moved to the batch's last position, in one
// transaction. No lease, no classification, no overlap. With ce, each
// message also carries the CloudEvents binary-mode headers the relay
// sends (built by hand from the columns), to tell the cost of the message
// format from the relay's own.
func rawRound(b *testing.B, db *sql.DB, js jetstream.JetStream, ce bool) int {
	ctx := context.Background()
	type row struct {
		pos                                 int64
		tenant, id, source, typ, stream, ct string
		version, t                          int64
		data                                []byte
		seq                                 uint64
		future                              jetstream.PubAckFuture
	}
	total := 0
	batch := make([]row, 0, 1024)
	for {
		batch = batch[:0]
		rows, err := db.QueryContext(ctx, `SELECT e.position, e.tenant, e.event_id, e.source, e.type, e.stream_id, e.content_type,
			e.version, e.time, e.data FROM events e LEFT JOIN outbox o ON o.position = e.position
			WHERE e.position > (SELECT settled FROM outbox_watermark) AND o.position IS NULL ORDER BY e.position LIMIT 1024`)
		if err != nil {
			b.Fatal(err)
		}
		for rows.Next() {
			var r row
			if err := rows.Scan(&r.pos, &r.tenant, &r.id, &r.source, &r.typ, &r.stream, &r.ct, &r.version, &r.t, &r.data); err != nil {
				b.Fatal(err)
			}
			batch = append(batch, r)
		}
		rows.Close()
		if len(batch) == 0 {
			return total
		}
		for i := range batch {
			r := &batch[i]
			m := &nats.Msg{Subject: "raw." + r.tenant, Data: r.data}
			if ce {
				m.Header = nats.Header{
					"ce-specversion": {"1.0"}, "ce-id": {r.id}, "ce-source": {r.source}, "ce-type": {r.typ},
					"ce-subject": {r.stream}, "ce-time": {time.Unix(0, r.t).UTC().Format(time.RFC3339Nano)},
					"ce-datacontenttype": {r.ct}, "ce-tenant": {r.tenant},
					"ce-streamversion": {strconv.FormatInt(r.version, 10)}, "ce-position": {strconv.FormatInt(r.pos, 10)},
				}
			}
			r.future, err = js.PublishMsgAsync(m, jetstream.WithMsgID(r.tenant+":"+r.id))
			if err != nil {
				b.Fatal(err)
			}
		}
		for i := range batch {
			select {
			case ack := <-batch[i].future.Ok():
				batch[i].seq = ack.Sequence
			case err := <-batch[i].future.Err():
				b.Fatal(err)
			}
		}
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			b.Fatal(err)
		}
		st, err := tx.PrepareContext(ctx, `INSERT INTO outbox (published_at, broker_sequence, position) VALUES (?, ?, ?)`)
		if err != nil {
			b.Fatal(err)
		}
		now := time.Now().UnixNano()
		for _, r := range batch {
			if _, err := st.ExecContext(ctx, now, r.seq, r.pos); err != nil {
				b.Fatal(err)
			}
		}
		st.Close()
		if _, err := tx.ExecContext(ctx, `UPDATE outbox_watermark SET settled = ?`, batch[len(batch)-1].pos); err != nil {
			b.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			b.Fatal(err)
		}
		total += len(batch)
	}
}

// BenchmarkRelay drains benchEvents events to an in-process JetStream
// server (default sync settings: acks before fsync) with the relay, and
// with the raw baseline on the same rows, alternately, round after round.
// It reports both rates and their ratio (x_raw), and the ratio to the raw
// baseline sending the relay's CloudEvents headers too (x_raw_ce).
func BenchmarkRelay(b *testing.B) {
	srv := natstest.RunJetStream(b, nil)
	path := filepath.Join(b.TempDir(), "bench.db")
	s, err := store.Open(context.Background(), path, nil) // synchronous=FULL, the default
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	fillStore(b, s, benchEvents)
	db := rawDB(b, path)
	nc := srv.Connect(b)
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(1024))
	if err != nil {
		b.Fatal(err)
	}
	resetRound(b, db, js)
	pub, err := natsjs.NewPublisher(context.Background(), natsjs.Options{Conn: nc})
	if err != nil {
		b.Fatal(err)
	}
	var relayTime, rawTime, rawCETime time.Duration
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		resetRound(b, db, js)
		r, err := publish.New(publish.Options{Store: s, Publisher: pub, Once: true})
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		start := time.Now()
		if err := r.Run(context.Background()); err != nil {
			b.Fatal(err)
		}
		relayTime += time.Since(start)
		for _, ce := range []bool{false, true} {
			b.StopTimer()
			resetRound(b, db, js)
			b.StartTimer()
			start = time.Now()
			if n := rawRound(b, db, js, ce); n != benchEvents {
				b.Fatalf("raw round published %d", n)
			}
			if ce {
				rawCETime += time.Since(start)
			} else {
				rawTime += time.Since(start)
			}
		}
	}
	b.StopTimer()
	rate := func(d time.Duration) float64 { return float64(b.N*benchEvents) / d.Seconds() }
	b.ReportMetric(rate(relayTime), "relay_msg/s")
	b.ReportMetric(rate(rawTime), "raw_msg/s")
	b.ReportMetric(rate(relayTime)/rate(rawTime), "x_raw")
	b.ReportMetric(rate(relayTime)/rate(rawCETime), "x_raw_ce")
}

// BenchmarkOutboxLag runs the relay against an in-process JetStream server
// while appenders keep a steady 2,000 events/s for 5 s (one event per
// append, synchronous=FULL), and reports the outbox lag of each event:
// from its commit (recorded_at) to the commit that marked it published.
func BenchmarkOutboxLag(b *testing.B) {
	const (
		rate     = 2000
		duration = 5 * time.Second
		writers  = 8
	)
	var lags []time.Duration
	for range b.N {
		srv := natstest.RunJetStream(b, nil)
		s, err := store.Open(context.Background(), filepath.Join(b.TempDir(), "lag.db"), nil)
		if err != nil {
			b.Fatal(err)
		}
		pub, err := natsjs.NewPublisher(context.Background(), natsjs.Options{URL: srv.URL(), CreateStream: true})
		if err != nil {
			b.Fatal(err)
		}
		r, err := publish.New(publish.Options{Store: s, Publisher: pub})
		if err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- r.Run(ctx) }()
		start := time.Now()
		var wg sync.WaitGroup
		per := rate / writers
		for w := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range int(duration.Seconds()) * per {
					// Paced: event i of this writer is due at start + i/per s.
					if d := time.Until(start.Add(time.Duration(i) * time.Second / time.Duration(per))); d > 0 {
						time.Sleep(d)
					}
					e := envelope.Event{Type: "order.placed", Source: "/bench", Data: benchData, DataContentType: "application/json"}
					if _, err := s.Append(context.Background(), "default", fmt.Sprint("w", w, "-", i%50), store.Any, e); err != nil {
						b.Error(err)
						return
					}
				}
			}()
		}
		wg.Wait()
		achieved := float64(rate*int(duration.Seconds())) / time.Since(start).Seconds()
		eventually(b, "the relay to catch up", time.Minute, func() bool {
			st, err := outbox.For(s).Stats(context.Background())
			return err == nil && st.Pending == 0
		})
		cancel()
		if err := <-done; err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(achieved, "appends/s")
		// recorded_at is the commit's time; published_at the marking
		// commit's, both by the store's clock.
		for after := int64(0); ; {
			es, err := outbox.For(s).Entries(context.Background(), after, 1000)
			if err != nil {
				b.Fatal(err)
			}
			for _, o := range es {
				lags = append(lags, o.PublishedAt.Sub(o.RecordedAt))
			}
			if len(es) < 1000 {
				break
			}
			after = es[len(es)-1].Position
		}
		pub.Close()
		s.Close()
		srv.Shutdown()
	}
	slices.Sort(lags)
	pct := func(p float64) float64 {
		return float64(lags[int(p*float64(len(lags)-1))]) / float64(time.Millisecond)
	}
	b.ReportMetric(pct(0.5), "p50_ms")
	b.ReportMetric(pct(0.99), "p99_ms")
	b.ReportMetric(pct(1), "max_ms")
}
