package store_test

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"path/filepath"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/storetest"
)

// BenchmarkTenantIndexAppend measures what the (tenant, position) index
// (SQLite migration 0020, PostgreSQL 0005) adds to an append: appends of
// 1 and of 100 events into a store with the index and into an identical
// store without it (dropped after the migration), one goroutine,
// alternately in chunks of 20 appends in the same run, each store
// holding 20,000 events of three tenants first. b.N is the number of
// appends per side; x_without is the rate with the index over the rate
// without (1 means free; 0.95 is a 5% cost).
func BenchmarkTenantIndexAppend(b *testing.B) {
	engines := []struct {
		name string
		addr func(b *testing.B, name string) string
		drop func(b *testing.B, addr string)
	}{
		{"sqlite", func(b *testing.B, name string) string { return filepath.Join(b.TempDir(), name+".db") },
			func(b *testing.B, addr string) { storetest.RawExec(b, addr, `DROP INDEX events_tenant_position`) }},
		{"postgres", func(b *testing.B, name string) string { return storetest.PostgresSchema(b, storetest.PostgresBase(b)) },
			func(b *testing.B, addr string) {
				u, err := url.Parse(addr)
				if err != nil {
					b.Fatal(err)
				}
				schema := u.Query().Get("eventlite_schema")
				q := u.Query()
				q.Del("eventlite_schema")
				u.RawQuery = q.Encode()
				db, err := sql.Open("pgx", u.String())
				if err != nil {
					b.Fatal(err)
				}
				defer db.Close()
				if _, err := db.Exec(`DROP INDEX "` + schema + `".events_tenant_position`); err != nil {
					b.Fatal(err)
				}
			}},
	}
	for _, eng := range engines {
		for _, per := range []int{1, 100} {
			b.Run(fmt.Sprintf("%s/events=%d", eng.name, per), func(b *testing.B) {
				ctx := context.Background()
				open := func(name string, drop bool) *store.Store {
					addr := eng.addr(b, name)
					s, err := store.Open(ctx, addr, nil)
					if err != nil {
						b.Fatal(err)
					}
					for i := range 200 {
						if _, err := s.Append(ctx, []string{"a", "b", "c"}[i%3], fmt.Sprintf("fx-%d", i%20), store.Any, benchEvents(100)...); err != nil {
							b.Fatal(err)
						}
					}
					if drop {
						if err := s.Close(); err != nil {
							b.Fatal(err)
						}
						eng.drop(b, addr)
						if s, err = store.Open(ctx, addr, nil); err != nil {
							b.Fatal(err)
						}
					}
					b.Cleanup(func() { _ = s.Close() })
					return s
				}
				with, without := open("with", false), open("without", true)
				evs := benchEvents(per)
				var dWith, dWithout time.Duration
				run := func(s *store.Store, n, from int) time.Duration {
					t0 := time.Now()
					for i := range n {
						for j := range evs {
							evs[j].ID = ulid.Make().String()
						}
						if _, err := s.Append(ctx, "b", fmt.Sprintf("s-%d", (from+i)%50), store.Any, evs...); err != nil {
							b.Fatal(err)
						}
					}
					return time.Since(t0)
				}
				const chunk = 20
				b.ResetTimer()
				for done := 0; done < b.N; done += chunk {
					n := min(chunk, b.N-done)
					if (done/chunk)%2 == 0 {
						dWith += run(with, n, done)
						dWithout += run(without, n, done)
					} else {
						dWithout += run(without, n, done)
						dWith += run(with, n, done)
					}
				}
				b.StopTimer()
				b.ReportMetric(float64(dWithout)/float64(dWith), "x_without")
			})
		}
	}
}

// benchEvents returns n events of a small JSON body.
func benchEvents(n int) []envelope.Event {
	evs := make([]envelope.Event, n)
	for i := range evs {
		evs[i] = envelope.Event{ID: ulid.Make().String(), Source: "/bench", Type: "bench.appended",
			DataContentType: "application/json", Data: []byte(`{"n":1}`)}
	}
	return evs
}
