package pgdriver

// Benchmarks of the append path against raw pgx doing the same SQL in the
// same run: "head" locks the head row as the driver does, "seq" takes
// positions from an identity column with no head lock (the skipped-event
// bug's design, shown for the cost of the guarantee), "driver" is Append.
// Every side writes to a schema of its own and opens its pool only for its
// turn (the server allows 100 connections; three pools of 64 would not
// fit), its connections made before the clock starts.
//
//	EVENTLITE_TEST_POSTGRES=postgres://... go test ./store/internal/pgdriver -run '^$' -bench . -count 5

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

type benchSide struct {
	name string
	// open makes the side's pool for conc workers; run appends ops
	// transactions of perTx events from worker w; close ends the pool.
	open  func(conc int)
	run   func(ctx context.Context, w, ops int) error
	close func()
	dur   time.Duration
	ops   int
	lat   []time.Duration
}

func (s *benchSide) rate(perTx int) float64 {
	if s.dur <= 0 {
		return 0
	}
	return float64(s.ops*perTx) / s.dur.Seconds()
}

// benchEvents makes n events with ids unique across the whole benchmark.
func benchEvents(prefix string, n int) []Event {
	evs := make([]Event, n)
	for i := range evs {
		id := fmt.Sprintf("%s-%d", prefix, i)
		evs[i] = Event{ID: id, Type: "order.placed", Source: "/bench", Time: time.Now().UnixNano(), ContentType: "application/json",
			Data: []byte(`{"order":"` + id + `","amount":1999,"currency":"EUR","lines":[{"sku":"A-1","qty":2}]}`)}
	}
	return evs
}

// rawAppend is the driver's SQL without the driver: one READ COMMITTED
// transaction, the head row locked first (head) or positions from the
// identity column of events_seq (!head), the stream's version read, the
// events inserted over unnest, the stream and the head row written.
func rawAppend(ctx context.Context, pool *pgxpool.Pool, quoted string, head bool, stream string, evs []Event) error {
	tx, err := pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.ReadCommitted})
	if err != nil {
		return err
	}
	defer tx.Rollback(ctx) //nolint:errcheck // after Commit, a no-op
	var h int64
	b := &pgx.Batch{}
	if head {
		b.Queue("SELECT position FROM " + quoted + ".log_head FOR UPDATE").QueryRow(func(r pgx.Row) error { return r.Scan(&h) })
	}
	b.Queue("SET LOCAL search_path TO " + quoted)
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return err
	}
	var cur int64
	if err := tx.QueryRow(ctx, "SELECT version FROM streams WHERE tenant = $1 AND stream_id = $2", "bench", stream).Scan(&cur); err != nil && err != pgx.ErrNoRows {
		return err
	}
	n := int64(len(evs))
	now := time.Now().UnixNano()
	c := newEventColumns(evs)
	b = &pgx.Batch{}
	if head {
		b.Queue(insertEvents, h+1, "bench", stream, cur+1, now, c.id, c.typ, c.source, c.time, c.contentType, c.dataSchema,
			c.data, c.correlation, c.causation, c.extensions)
	} else {
		b.Queue(insertEventsSeq, "bench", stream, cur+1, now, c.id, c.typ, c.source, c.time, c.contentType, c.dataSchema,
			c.data, c.correlation, c.causation, c.extensions)
	}
	b.Queue(upsertStream, "bench", stream, cur+n, now)
	if head {
		b.Queue("UPDATE log_head SET position = $1", h+n)
	}
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

const insertEventsSeq = `INSERT INTO events_seq (tenant, stream_id, version, recorded_at,
    event_id, type, source, time, content_type, data_schema, data, correlation_id, causation_id, extensions)
SELECT $1, $2, $3::bigint + u.ord - 1, $4,
    u.event_id, u.type, u.source, u.time, u.content_type, u.data_schema, u.data, u.correlation_id, u.causation_id, u.extensions
FROM unnest($5::text[], $6::text[], $7::text[], $8::bigint[], $9::text[], $10::text[], $11::bytea[], $12::text[], $13::text[], $14::text[])
    WITH ORDINALITY AS u (event_id, type, source, time, content_type, data_schema, data, correlation_id, causation_id, extensions, ord)
ORDER BY u.ord`

// benchSides makes the three sides, each on a fresh migrated schema.
func benchSides(b *testing.B, perTx int) []*benchSide {
	ctx := context.Background()
	var sides []*benchSide
	for _, name := range []string{"head", "seq", "driver"} {
		schema := freshSchema(b)
		setup := openSchema(b, schema, &Options{PoolSize: 1})
		if err := setup.Migrate(ctx); err != nil {
			b.Fatal(err)
		}
		if name == "seq" {
			if _, err := setup.Pool().Exec(ctx, "SET search_path TO "+setup.quoted+`;
CREATE TABLE events_seq (LIKE events INCLUDING ALL);
ALTER TABLE events_seq ALTER COLUMN position ADD GENERATED ALWAYS AS IDENTITY`); err != nil {
				b.Fatal(err)
			}
		}
		setup.Close()
		s := &benchSide{name: name}
		var db *DB
		s.open = func(conc int) {
			var err error
			db, err = Open(ctx, withSchema(b, schema), &Options{PoolSize: int32(conc), BusyTimeout: time.Minute})
			if err != nil {
				b.Fatal(err)
			}
			// Make every connection before the clock starts.
			var held []*pgxpool.Conn
			for range conc {
				c, err := db.Pool().Acquire(ctx)
				if err != nil {
					b.Fatal(err)
				}
				held = append(held, c)
			}
			for _, c := range held {
				c.Release()
			}
		}
		s.close = func() { db.Close() }
		s.run = func(ctx context.Context, w, ops int) error {
			for i := range ops {
				id := fmt.Sprintf("%s-w%d-%d-%d", name, w, time.Now().UnixNano(), i)
				evs := benchEvents(id, perTx)
				stream := fmt.Sprintf("order-w%d", w)
				t0 := time.Now()
				var err error
				switch name {
				case "driver":
					_, err = db.Append(ctx, "bench", stream, Any, evs)
				default:
					err = rawAppend(ctx, db.Pool(), db.quoted, name == "head", stream, evs)
				}
				if err != nil {
					return err
				}
				if w == 0 {
					s.lat = append(s.lat, time.Since(t0))
				}
			}
			return nil
		}
		sides = append(sides, s)
	}
	return sides
}

// runBench runs b.N transactions on every side, conc workers at once,
// chunk transactions per turn, rotating which side goes first.
func runBench(b *testing.B, perTx, conc int) {
	testURL(b)
	sides := benchSides(b, perTx)
	ctx := context.Background()
	chunk := max(conc*8, 64)
	if perTx > 1 {
		chunk = max(conc*2, 8)
	}
	b.ResetTimer()
	for done, round := 0, 0; done < b.N; round++ {
		k := min(chunk, b.N-done)
		for i := range sides {
			s := sides[(i+round)%len(sides)]
			b.StopTimer()
			s.open(conc)
			b.StartTimer()
			var wg sync.WaitGroup
			errs := make(chan error, conc)
			t0 := time.Now()
			for w := range conc {
				n := k / conc
				if w < k%conc {
					n++
				}
				wg.Go(func() {
					if err := s.run(ctx, w, n); err != nil {
						errs <- err
					}
				})
			}
			wg.Wait()
			s.dur += time.Since(t0)
			s.ops += k
			b.StopTimer()
			s.close()
			close(errs)
			for err := range errs {
				b.Fatal(err)
			}
			b.StartTimer()
		}
		done += k
	}
	b.StopTimer()
	head, seq, drv := sides[0], sides[1], sides[2]
	for _, s := range sides {
		b.ReportMetric(s.rate(perTx), s.name+"_ev/s")
	}
	if r := head.rate(perTx); r > 0 {
		b.ReportMetric(drv.rate(perTx)/r, "x_raw")
	}
	if r := seq.rate(perTx); r > 0 {
		b.ReportMetric(head.rate(perTx)/r, "x_seq")
	}
	b.ReportMetric(float64(drv.dur.Nanoseconds())/float64(drv.ops), "ns/op")
	lat := slices.Clone(drv.lat)
	slices.Sort(lat)
	if len(lat) > 0 {
		ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
		b.ReportMetric(ms(lat[len(lat)/2]), "driver_p50_ms")
		b.ReportMetric(ms(lat[min(len(lat)-1, len(lat)*99/100)]), "driver_p99_ms")
		b.ReportMetric(ms(lat[len(lat)-1]), "driver_max_ms")
	}
}

// BenchmarkAppend: ev/s of each side, x_raw (driver over raw with the head
// lock) and x_seq (raw with the head lock over raw with a sequence: the
// price of positions in commit order). ns/op is the driver's per
// transaction.
func BenchmarkAppend(b *testing.B) {
	for _, c := range []struct {
		name        string
		perTx, conc int
	}{
		{"1ev", 1, 1},
		{"100ev", 100, 1},
		{"conc16", 1, 16},
		{"conc64", 1, 64},
	} {
		b.Run(c.name, func(b *testing.B) { runBench(b, c.perTx, c.conc) })
	}
}
