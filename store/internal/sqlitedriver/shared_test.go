package sqlitedriver

import (
	"context"
	"database/sql"
	sqldriver "database/sql/driver"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/internal/timecol"
	"github.com/eventlite/eventlite/store/internal/driver"
)

// oldInsertEventsSQL is the INSERT of k events as the writer ran it
// before it bound shared values once per statement: twelve anonymous
// parameters per event.
func oldInsertEventsSQL(k int) string {
	row := "(?" + strings.Repeat(", ?", EventCols-1) + ")"
	return `INSERT INTO events (position, tenant, stream_id, version, event_id, type, source, time,
		content_type, attrs, recorded_at, data)
		VALUES ` + row + strings.Repeat(", "+row, k-1)
}

// oldWriter inserts events the way the writer did before, statement by
// statement of up to InsertChunk events on the driver's connection.
type oldWriter struct {
	conn  *sql.Conn
	stmts [InsertChunk]sqldriver.Stmt
	args  []sqldriver.NamedValue
}

func (o *oldWriter) insert(ctx context.Context, b driver.EventBatch) error {
	for start := 0; start < len(b.Events); start += InsertChunk {
		chunk := b.Events[start:min(start+InsertChunk, len(b.Events))]
		o.args = o.args[:0]
		add := func(vs ...any) {
			for _, v := range vs {
				o.args = append(o.args, sqldriver.NamedValue{Ordinal: len(o.args) + 1, Value: v})
			}
		}
		for i := range chunk {
			e := &chunk[i]
			attrs, err := JoinAttrs(e)
			if err != nil {
				return err
			}
			var attrsVal any
			if attrs != nil {
				attrsVal = attrs
			}
			add(b.FirstPosition+int64(start+i), b.Tenant, b.Stream, e.StreamVersion, e.ID, e.Type, e.Source,
				timecol.Value(e.Time), e.DataContentType, attrsVal, b.RecordedAt, e.Data)
		}
		err := o.conn.Raw(func(dc any) error {
			st := o.stmts[len(chunk)-1]
			if st == nil {
				var err error
				if st, err = dc.(sqldriver.ConnPrepareContext).PrepareContext(ctx, oldInsertEventsSQL(len(chunk))); err != nil {
					return err
				}
				o.stmts[len(chunk)-1] = st
			}
			_, err := st.(sqldriver.StmtExecContext).ExecContext(ctx, o.args)
			return err
		})
		clear(o.args)
		if err != nil {
			return err
		}
	}
	return nil
}

func (o *oldWriter) close() {
	_ = o.conn.Raw(func(any) error {
		for _, st := range o.stmts {
			if st != nil {
				_ = st.Close()
			}
		}
		return nil
	})
}

// storedRows is every column of every event, quoted (quote() tells an
// INTEGER from a TEXT from a BLOB and NULL), in position order.
func storedRows(ctx context.Context, t *testing.T, conn *sql.Conn) []string {
	t.Helper()
	rows, err := conn.QueryContext(ctx, `SELECT quote(position), quote(tenant), quote(stream_id), quote(version),
		quote(event_id), quote(type), quote(source), quote(time), quote(content_type), quote(attrs),
		quote(recorded_at), quote(data) FROM events ORDER BY position`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var c [EventCols]string
		if err := rows.Scan(&c[0], &c[1], &c[2], &c[3], &c[4], &c[5], &c[6], &c[7], &c[8], &c[9], &c[10], &c[11]); err != nil {
			t.Fatal(err)
		}
		out = append(out, strings.Join(c[:], " | "))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// sharedBatches are batches of 1, 31, 32, 33 and 100 events (one
// statement, one short of a statement, exactly one, one over, four), in
// shapes where a statement shares every value, some of them or none,
// changing at and around the statement boundaries.
func sharedBatches() []driver.EventBatch {
	t0 := time.Unix(1700000000, 123456789)
	far := time.Date(2500, 3, 4, 5, 6, 7, 8, time.UTC) // stored as TEXT
	paris := time.FixedZone("CET", 3600)
	shapes := map[string]func(i, n int, e *envelope.Event){
		// Everything the store sets alike: one time, source and type.
		"uniform": func(i, n int, e *envelope.Event) { e.Time = t0 },
		// The same instants in another zone, and far ones as TEXT.
		"zones": func(i, n int, e *envelope.Event) {
			e.Time = t0.In(paris)
			if i%2 == 1 {
				e.Time = t0
			}
			if i >= InsertChunk {
				e.Time = far
			}
		},
		// Each event its own time (a caller's), the last of all its own
		// source, every seventh its own content type.
		"mixed": func(i, n int, e *envelope.Event) {
			e.Time = t0.Add(time.Duration(i) * time.Millisecond)
			if i == n-1 {
				e.Source = "other"
			}
			if i%7 == 3 {
				e.DataContentType = "text/plain"
			}
			if i%11 == 5 {
				e.Time = far.Add(time.Duration(i))
			}
		},
		// Differences only at the boundaries: event 31 (the last of
		// the first statement) and 32 (the first of the second).
		"boundaries": func(i, n int, e *envelope.Event) {
			e.Time = t0
			if i == InsertChunk-1 {
				e.Source, e.Time = "last", t0.Add(1)
			}
			if i == InsertChunk {
				e.DataContentType = "application/xml"
			}
		},
		// Attributes, no data and empty data, all shared columns alike.
		"attrs": func(i, n int, e *envelope.Event) {
			e.Time = t0
			switch i % 5 {
			case 0:
				e.Extensions = map[string]any{"k": fmt.Sprint(i)}
				e.CorrelationID = "corr"
			case 1:
				e.Data = nil
			case 2:
				e.Data = []byte{}
				e.DataSchema = "schema"
			case 3:
				e.CausationID = "cause"
				e.Data = nil
			}
		},
		// Versions with a gap in the second statement: they are
		// bound, not computed, there.
		"gaps": func(i, n int, e *envelope.Event) {
			e.Time = t0
			if i >= InsertChunk+5 {
				e.StreamVersion += 10
			}
		},
	}
	var out []driver.EventBatch
	first := int64(8)
	for _, name := range []string{"uniform", "zones", "mixed", "boundaries", "attrs", "gaps"} {
		for _, n := range []int{1, 31, 32, 33, 100} {
			stream := fmt.Sprintf("%s-%d", name, n)
			b := driver.EventBatch{Tenant: "t", Stream: stream, FirstPosition: first, RecordedAt: 1700000001000000000 + first}
			for i := range n {
				e := envelope.Event{ID: fmt.Sprintf("%s-%d", stream, i), Type: fmt.Sprintf("type-%d", i%3), Source: "src",
					DataContentType: "application/json", StreamVersion: int64(i + 1), Data: []byte(fmt.Sprintf(`{"i":%d}`, i))}
				shapes[name](i, n, &e)
				b.Events = append(b.Events, e)
			}
			out = append(out, b)
			first += int64(n) + 3 // positions after a gap, as after a scavenge
		}
	}
	return out
}

// TestWriterSharedValues: the writer, which binds the values a
// statement's events share once, stores every column of every event
// exactly as the statement binding all of them for each event did.
func TestWriterSharedValues(t *testing.T) {
	ctx := context.Background()
	conn, w := newTestWriter(t, "")
	oldConn, _ := newTestWriter(t, "")
	old := &oldWriter{conn: oldConn}
	defer old.close()
	if err := w.Begin(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := oldConn.ExecContext(ctx, "BEGIN"); err != nil {
		t.Fatal(err)
	}
	for _, b := range sharedBatches() {
		if err := w.InsertEvents(ctx, b); err != nil {
			t.Fatalf("%s: %v", b.Stream, err)
		}
		if err := old.insert(ctx, b); err != nil {
			t.Fatalf("%s, as before: %v", b.Stream, err)
		}
	}
	if err := w.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := oldConn.ExecContext(ctx, "COMMIT"); err != nil {
		t.Fatal(err)
	}
	got, want := storedRows(ctx, t, conn), storedRows(ctx, t, oldConn)
	if len(got) != len(want) {
		t.Fatalf("%d events stored, want %d", len(got), len(want))
	}
	bad := 0
	for i := range got {
		if got[i] != want[i] {
			t.Errorf("event %d stored\n%s\nwant\n%s", i, got[i], want[i])
			if bad++; bad == 5 {
				t.FailNow()
			}
		}
	}
}

// TestChunkShared: a statement binds once what all its events share,
// and binds per event any column where one event differs; one event has
// one statement.
func TestChunkShared(t *testing.T) {
	t0 := time.Unix(1700000000, 0)
	evs := func(n int) []envelope.Event {
		var out []envelope.Event
		for i := range n {
			out = append(out, envelope.Event{Source: "s", DataContentType: "c", Time: t0, StreamVersion: int64(5 + i), Type: fmt.Sprint(i)})
		}
		return out
	}
	if s := chunkShared(evs(1)); s != 0 {
		t.Errorf("one event: %#x, want 0", s)
	}
	if s := chunkShared(evs(InsertChunk)); s != SharedAll {
		t.Errorf("alike events: %#x, want all", s)
	}
	for _, c := range []struct {
		name   string
		change func(e *envelope.Event)
		lost   Shared
	}{
		{"version", func(e *envelope.Event) { e.StreamVersion++ }, SharedVersion},
		{"source", func(e *envelope.Event) { e.Source = "x" }, SharedSource},
		{"time", func(e *envelope.Event) { e.Time = e.Time.Add(1) }, SharedTime},
		{"content type", func(e *envelope.Event) { e.DataContentType = "x" }, SharedContentType},
		{"time zone", func(e *envelope.Event) { e.Time = e.Time.In(time.FixedZone("X", 7200)) }, 0},
	} {
		for _, at := range []int{1, InsertChunk - 1} {
			e := evs(InsertChunk)
			c.change(&e[at])
			if s := chunkShared(e); s != SharedAll&^c.lost {
				t.Errorf("%s differs at %d: %#x, want %#x", c.name, at, s, SharedAll&^c.lost)
			}
		}
	}
}

// TestInsertEventsSQL: the statement of k events sharing s has as many
// parameters as InsertEventsArgs says, the later rows naming the shared
// ones and adding their index to the position (and the version, when
// consecutive).
func TestInsertEventsSQL(t *testing.T) {
	ctx := context.Background()
	conn, _ := newTestWriter(t, "")
	for s := range SharedAll + 1 {
		for _, k := range []int{1, 2, InsertChunk} {
			q := InsertEventsSQL(k, s)
			// EXPLAIN binds every parameter; the largest number a
			// Variable loads is their count.
			want := InsertEventsArgs(k, s)
			rows, err := conn.QueryContext(ctx, "EXPLAIN "+q, make([]any, want)...)
			if err != nil {
				t.Fatalf("shared %#x, %d events: %v", s, k, err)
			}
			n := 0
			for rows.Next() {
				var addr, p1, p2, p3 int
				var op string
				var p4, p5, comment any
				if err := rows.Scan(&addr, &op, &p1, &p2, &p3, &p4, &p5, &comment); err != nil {
					t.Fatal(err)
				}
				if op == "Variable" {
					n = max(n, p1)
				}
			}
			if err := rows.Close(); err != nil {
				t.Fatal(err)
			}
			if n != want {
				t.Errorf("shared %#x, %d events: %d parameters, InsertEventsArgs says %d", s, k, n, want)
			}
		}
	}
	if q := InsertEventsSQL(3, SharedAll); !strings.HasSuffix(q, ", ((?1 + 2), ?2, ?3, (?4 + 2), ?, ?, ?7, ?8, ?9, ?, ?11, ?)") {
		t.Errorf("InsertEventsSQL(3, all):\n%s", q)
	}
	if q := InsertEventsSQL(2, 0); !strings.HasSuffix(q, ", ((?1 + 1), ?2, ?3, ?, ?, ?, ?, ?, ?, ?, ?11, ?)") {
		t.Errorf("InsertEventsSQL(2, none):\n%s", q)
	}
}

// BenchmarkInsertShared times InsertEvents against the statements that
// bound every value of every event (oldWriter), alternately in the same
// process, each in a transaction of its own on a file without fsync:
// x_old is the old insert's time over the new one's (above 1: faster).
// The events are alike as a store's append makes them: one source,
// content type and time, consecutive versions, each its own id, type
// and data.
func BenchmarkInsertShared(b *testing.B) {
	for _, n := range []int{1, 100} {
		b.Run(fmt.Sprintf("batch=%d", n), func(b *testing.B) {
			ctx := context.Background()
			newConn, w := newTestWriter(b, "")
			oldConn, _ := newTestWriter(b, "")
			old := &oldWriter{conn: oldConn}
			defer old.close()
			for _, c := range []*sql.Conn{newConn, oldConn} {
				if _, err := c.ExecContext(ctx, "PRAGMA journal_mode = WAL; PRAGMA synchronous = OFF"); err != nil {
					b.Fatal(err)
				}
			}
			data := []byte(strings.Repeat(`{"order":"ord_000123","amount":4200}`, 6))
			now := time.Now()
			mk := func(i int) driver.EventBatch {
				eb := driver.EventBatch{Tenant: "acme", Stream: fmt.Sprintf("order-%d", i), FirstPosition: int64(8 + i*n), RecordedAt: now.UnixNano()}
				for j := range n {
					eb.Events = append(eb.Events, envelope.Event{ID: fmt.Sprintf("01J%020d", i*n+j), Type: fmt.Sprintf("OrderEvent%d", j%5),
						Source: "/orders", DataContentType: "application/json", Time: now, StreamVersion: int64(j + 1), Data: data})
				}
				return eb
			}
			inTx := func(c *sql.Conn, f func() error) time.Duration {
				if _, err := c.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
					b.Fatal(err)
				}
				t0 := time.Now()
				if err := f(); err != nil {
					b.Fatal(err)
				}
				d := time.Since(t0)
				if _, err := c.ExecContext(ctx, "COMMIT"); err != nil {
					b.Fatal(err)
				}
				return d
			}
			var dNew, dOld time.Duration
			b.ResetTimer()
			for i := range b.N {
				eb := mk(i)
				runNew := func() { dNew += inTx(newConn, func() error { return w.InsertEvents(ctx, eb) }) }
				runOld := func() { dOld += inTx(oldConn, func() error { return old.insert(ctx, eb) }) }
				if i%2 == 0 {
					runNew()
					runOld()
				} else {
					runOld()
					runNew()
				}
			}
			b.ReportMetric(float64(dNew.Nanoseconds())/float64(b.N)/float64(n), "new_ns/ev")
			b.ReportMetric(float64(dOld.Nanoseconds())/float64(b.N)/float64(n), "old_ns/ev")
			b.ReportMetric(float64(dOld)/float64(dNew), "x_old")
		})
	}
}
