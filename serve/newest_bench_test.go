package serve_test

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/serve"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/storetest"
)

// newestEventsEnv sets the size of BenchmarkNewestFirst's big tenant
// (default 200,000; 20,000 under -short): a one-off run at 1,000,000 sets
// it to 1000000.
const newestEventsEnv = "EVENTLITE_BENCH_EVENTS"

// BenchmarkNewestFirst measures what the overview and the tail view read
// over HTTP, on SQLite and (with EVENTLITE_TEST_POSTGRES) PostgreSQL: a
// store whose tenant "big" holds 200,000 events (EVENTLITE_BENCH_EVENTS)
// in 1,000 streams among two tenants of 5,000, all recorded more than a
// minute before the reads.
//
//   - limit=N: GET /v1/tenants/big/events?direction=backward&limit=N
//     against the same page forward (from the tenant's first position),
//     alternately in one loop; x_forward is the backward page's median
//     time over the forward page's.
//   - type, prefix: the same with ?type= (a third of the events) and
//     ?stream_prefix= (a tenth of the batches, every tenth, from the
//     sixth on).
//   - stats: GET /v1/tenants/big/stats against the same route on a store
//     of 5,000 events in 50 streams, alternately; x_5k is the ratio of
//     the medians.
//
// On PostgreSQL the fixture is analyzed (ANALYZE) once it is loaded, as
// autovacuum would after a bulk load.
func BenchmarkNewestFirst(b *testing.B) {
	size := 200_000
	if testing.Short() {
		size = 20_000
	}
	if v := os.Getenv(newestEventsEnv); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1000 {
			b.Fatalf("%s=%q: want a number of events of at least 1000", newestEventsEnv, v)
		}
		size = n
	}
	engines := []struct {
		name string
		open func(b *testing.B, name string) string
	}{
		{"sqlite", func(b *testing.B, name string) string { return filepath.Join(b.TempDir(), name+".db") }},
		{"postgres", func(b *testing.B, name string) string {
			return storetest.PostgresSchema(b, storetest.PostgresBase(b))
		}},
	}
	for _, eng := range engines {
		b.Run(eng.name, func(eb *testing.B) {
			// The fixtures belong to the engine's benchmark: its
			// sub-benchmarks share them, built when the first one runs.
			var big, small string
			setup := func(*testing.B) {
				if big != "" {
					return
				}
				big = newestFixture(eb, eng.open(eb, "big"), size, 1000, true)
				small = newestFixture(eb, eng.open(eb, "small"), 5000, 50, false)
			}
			if eng.name == "postgres" {
				storetest.PostgresBase(eb) // skips without a server
			}
			for _, limit := range []int{1, 20, 200} {
				eb.Run("limit="+strconv.Itoa(limit), func(b *testing.B) {
					setup(b)
					q := "?limit=" + strconv.Itoa(limit)
					pairedGets(b, big, "/v1/tenants/big/events"+q+"&direction=backward", big, "/v1/tenants/big/events"+q, "x_forward")
				})
			}
			eb.Run("type", func(b *testing.B) {
				setup(b)
				q := "?limit=20&type=order.paid"
				pairedGets(b, big, "/v1/tenants/big/events"+q+"&direction=backward", big, "/v1/tenants/big/events"+q, "x_forward")
			})
			eb.Run("prefix", func(b *testing.B) {
				setup(b)
				q := "?limit=20&stream_prefix=tail-"
				pairedGets(b, big, "/v1/tenants/big/events"+q+"&direction=backward", big, "/v1/tenants/big/events"+q, "x_forward")
			})
			eb.Run("stats", func(b *testing.B) {
				setup(b)
				pairedGets(b, big, "/v1/tenants/big/stats", small, "/v1/tenants/big/stats", "x_5k")
			})
		})
	}
}

// newestFixture fills the store at addr (a tenant "big" of size events
// in streams streams and, with others, tenants "other1" and "other2" of
// 5,000 each interleaved with it), recorded by a clock an hour back, and
// serves it; it returns the server's URL.
func newestFixture(b *testing.B, addr string, size, streams int, others bool) string {
	b.Helper()
	ctx := context.Background()
	t0 := time.Now()
	back := time.Now().Add(-time.Hour)
	s, err := store.Open(ctx, addr, &store.Options{Synchronous: "NORMAL", Now: func() time.Time { return back }})
	if err != nil {
		b.Fatal(err)
	}
	const per = 100
	evs := make([]envelope.Event, per)
	fill := func(n int, typ func(i int) string) []envelope.Event {
		for j := range n {
			evs[j] = envelope.Event{ID: ulid.Make().String(), Source: "/fixture", Type: typ(j),
				DataContentType: "application/json", Data: []byte(`{"n":1}`)}
		}
		return evs[:n]
	}
	batches := (size + per - 1) / per
	for i := range batches {
		stream := fmt.Sprintf("order-%05d", i%streams)
		if i%10 == 5 {
			stream = fmt.Sprintf("tail-%05d", i%streams)
		}
		n := min(per, size-i*per)
		if _, err := s.Append(ctx, "big", stream, store.Any, fill(n, func(j int) string {
			if j%3 == 0 {
				return "order.paid"
			}
			return "order.placed"
		})...); err != nil {
			b.Fatal(err)
		}
		if others && i%(batches/50+1) == 0 {
			for _, t := range []string{"other1", "other2"} {
				if _, err := s.Append(ctx, t, fmt.Sprintf("s-%d", i%50), store.Any, fill(per, func(int) string { return "other.happened" })...); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	if u, err := url.Parse(addr); err == nil && u.Scheme == "postgres" {
		// Table statistics, as autovacuum gathers them after a bulk load.
		schema := u.Query().Get("eventlite_schema")
		q := u.Query()
		q.Del("eventlite_schema")
		u.RawQuery = q.Encode()
		db, err := sql.Open("pgx", u.String())
		if err != nil {
			b.Fatal(err)
		}
		_, err = db.Exec(`ANALYZE "` + schema + `".events, "` + schema + `".streams`)
		_ = db.Close()
		if err != nil {
			b.Fatal(err)
		}
	}
	s, err = store.Open(ctx, addr, nil)
	if err != nil {
		b.Fatal(err)
	}
	h, err := serve.New(s, nil)
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(h)
	b.Cleanup(func() {
		srv.Close()
		_ = h.Close()
		_ = s.Close()
	})
	b.Logf("fixture of %d events in %d streams ready in %v", size, streams, time.Since(t0).Round(time.Millisecond))
	return srv.URL
}

// pairedGets times GET a and GET b alternately, b.N of each, and reports
// each side's median and a's median over b's as metric.
func pairedGets(tb *testing.B, urlA, pathA, urlB, pathB, metric string) {
	c := &http.Client{}
	get := func(u string) time.Duration {
		t0 := time.Now()
		res, err := c.Get(u)
		if err != nil {
			tb.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, res.Body)
		_ = res.Body.Close()
		if res.StatusCode != http.StatusOK {
			tb.Fatalf("GET %s: %s", u, res.Status)
		}
		return time.Since(t0)
	}
	// Warm both sides once, untimed.
	get(urlA + pathA)
	get(urlB + pathB)
	as, bs := make([]time.Duration, 0, tb.N), make([]time.Duration, 0, tb.N)
	tb.ResetTimer()
	for i := range tb.N {
		if i%2 == 0 {
			as = append(as, get(urlA+pathA))
			bs = append(bs, get(urlB+pathB))
		} else {
			bs = append(bs, get(urlB+pathB))
			as = append(as, get(urlA+pathA))
		}
	}
	tb.StopTimer()
	ma, mb := medianOf(as), medianOf(bs)
	tb.ReportMetric(float64(ma.Microseconds()), "a_p50_us")
	tb.ReportMetric(float64(mb.Microseconds()), "b_p50_us")
	tb.ReportMetric(float64(ma)/float64(mb), metric)
}

func medianOf(ds []time.Duration) time.Duration {
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	return ds[len(ds)/2]
}
