package pgdriver

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/store/internal/driver"
	"github.com/eventlite/eventlite/store/internal/pgaddr"
)

// roundTrips counts the statements a connection sends (each one round
// trip: pgx sends a query and waits for its answer), prepares aside.
type roundTrips struct {
	n   atomic.Int64
	log []string
}

func (r *roundTrips) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	r.n.Add(1)
	q := strings.Join(strings.Fields(d.SQL), " ")
	if len(q) > 60 {
		q = q[:60] + "..."
	}
	r.log = append(r.log, q)
	return ctx
}

func (r *roundTrips) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// A batch is one round trip: its queries are sent together, then read.
func (r *roundTrips) TraceBatchStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceBatchStartData) context.Context {
	r.n.Add(1)
	var qs []string
	for _, q := range d.Batch.QueuedQueries {
		qs = append(qs, strings.Join(strings.Fields(q.SQL), " "))
	}
	q := "batch: " + strings.Join(qs, "; ")
	if len(q) > 100 {
		q = q[:100] + "..."
	}
	r.log = append(r.log, q)
	return ctx
}

func (r *roundTrips) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}
func (r *roundTrips) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData)     {}

// tracedWriter opens a migrated fresh schema and the writer on one
// connection of it, whose statements rt counts.
func tracedWriter(t *testing.T, rt *roundTrips) (*sql.Conn, driver.Writer) {
	t.Helper()
	ctx := context.Background()
	a, err := pgaddr.ParseAddress(withSchema(t, freshSchema(t)))
	if err != nil {
		t.Fatal(err)
	}
	pc, err := pgx.ParseConfig(a.ConnString)
	if err != nil {
		t.Fatal(err)
	}
	pc.RuntimeParams["search_path"] = pgx.Identifier{a.Schema}.Sanitize()
	pc.Tracer = rt
	db := stdlib.OpenDB(*pc)
	t.Cleanup(func() { db.Close() })
	c, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	ms, err := Migrations()
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		if _, err := (Driver{}).ApplyMigration(ctx, c, m, nil); err != nil {
			t.Fatal(err)
		}
	}
	w, err := Exec{}.PrepareWriter(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return c, w
}

func testBatch(stream string, first, version int64, n int, ids ...string) driver.EventBatch {
	b := driver.EventBatch{Tenant: "acme", Stream: stream, FirstPosition: first, RecordedAt: 7}
	for i := range n {
		id := fmt.Sprintf("%s-%d", stream, version+int64(i)+1)
		if i < len(ids) && ids[i] != "" {
			id = ids[i]
		}
		b.Events = append(b.Events, envelope.Event{ID: id, Type: "t", Source: "/s", Time: time.Unix(0, int64(i)),
			DataContentType: "application/json", Data: []byte(`{}`), StreamVersion: version + int64(i) + 1})
	}
	return b
}

// TestWriterGroupRoundTrips: a group of two 100-event appends (the first
// to a new stream) and a third refused for a reused id, as the store's
// writer runs them (runGroup: a savepoint per request), takes one round
// trip per statement of the append path and none per savepoint release:
// the batch's events are one statement (not one per 32), and each
// release goes with the next SAVEPOINT or the COMMIT. What it wrote is
// what the requests that succeeded wrote.
func TestWriterGroupRoundTrips(t *testing.T) {
	rt := &roundTrips{}
	c, w := tracedWriter(t, rt)
	ctx := context.Background()
	must := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	// A transaction rolled back first, as the store warms its writer:
	// the statements are prepared before the count starts.
	must("warm begin", w.Begin(ctx))
	must("warm savepoint", w.Savepoint(ctx, driver.RequestScope))
	_, err := w.StreamState(ctx, "acme", "a", true)
	must("warm state", err)
	must("warm release", w.Release(ctx, driver.RequestScope))
	must("warm savepoint 2", w.Savepoint(ctx, driver.RequestScope))
	_, err = w.StreamState(ctx, "acme", "a", false)
	must("warm state 2", err)
	must("warm rollback", w.Rollback(ctx))
	rt.n.Store(0)
	rt.log = nil
	must("begin", w.Begin(ctx))
	// Request 1: a new stream.
	must("savepoint 1", w.Savepoint(ctx, driver.RequestScope))
	st, err := w.StreamState(ctx, "acme", "a", true)
	must("state 1", err)
	if st != (driver.StreamState{}) {
		t.Fatalf("state of a new stream: %+v", st)
	}
	must("insert 1", w.InsertEvents(ctx, testBatch("a", 1, 0, 100)))
	must("create", w.CreateStream(ctx, "acme", "a", 7))
	must("release 1", w.Release(ctx, driver.RequestScope))
	// Request 2: the same stream.
	must("savepoint 2", w.Savepoint(ctx, driver.RequestScope))
	st, err = w.StreamState(ctx, "acme", "a", false)
	must("state 2", err)
	if !st.Row || st.Version != 100 {
		t.Fatalf("state after request 1: %+v", st)
	}
	must("insert 2", w.InsertEvents(ctx, testBatch("a", 101, 100, 100)))
	must("release 2", w.Release(ctx, driver.RequestScope))
	// Request 3: its 50th event reuses an id of request 1: refused, and
	// rolled back to its savepoint; the transaction goes on.
	must("savepoint 3", w.Savepoint(ctx, driver.RequestScope))
	_, err = w.StreamState(ctx, "acme", "b", false)
	must("state 3", err)
	ids := make([]string, 50)
	ids[49] = "a-7"
	if err := w.InsertEvents(ctx, testBatch("b", 201, 0, 60, ids...)); classifyPG(err) != driver.Constraint {
		t.Fatalf("insert reusing an id: %v, want a constraint error", err)
	}
	must("rollback to 3", w.RollbackTo(ctx, driver.RequestScope))
	must("release 3", w.Release(ctx, driver.RequestScope))
	must("commit", w.Commit(ctx))
	// begin, then per request its savepoint (and the previous one's
	// release) with its state read, its insert (request 1: and its
	// streams row; request 3: the undo of its refused insert, and the
	// rollback to its savepoint), and the last release with the commit.
	if got, want := rt.n.Load(), int64(1+3+2+4+1); got != want {
		t.Errorf("%d round trips, want %d:\n%s", got, want, strings.Join(rt.log, "\n"))
	}
	type row struct {
		Stream         string
		Count, MaxPos  int64
		MaxVer, MinVer int64
	}
	var got []row
	rows, err := c.QueryContext(ctx, `SELECT stream_id, count(*), max(position), max(version), min(version) FROM events GROUP BY stream_id ORDER BY stream_id`)
	must("read", err)
	for rows.Next() {
		var r row
		must("scan", rows.Scan(&r.Stream, &r.Count, &r.MaxPos, &r.MaxVer, &r.MinVer))
		got = append(got, r)
	}
	must("rows", rows.Err())
	if diff := cmp.Diff([]row{{"a", 200, 200, 200, 1}}, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	var head int64
	must("head", c.QueryRowContext(ctx, `SELECT position FROM log_head`).Scan(&head))
	if head != 200 {
		t.Errorf("head at %d, want 200", head)
	}
}

// TestWriterInsertColumns: every column of an event round-trips through
// the arrays InsertEventsSQL unnests, NULL data and extensions included.
func TestWriterInsertColumns(t *testing.T) {
	c, w := tracedWriter(t, &roundTrips{})
	ctx := context.Background()
	b := driver.EventBatch{Tenant: "acme", Stream: "s", FirstPosition: 1, RecordedAt: 99, Events: []envelope.Event{
		{ID: "e1", Type: "t1", Source: "/a", Time: time.Unix(0, 11), DataContentType: "application/json", Data: []byte(`{"x":1}`),
			DataSchema: "urn:s", CorrelationID: "c", CausationID: "k", Extensions: map[string]any{"n": int32(5)}, StreamVersion: 1},
		{ID: "e2", Type: "t2", Source: "/b", Time: time.Unix(0, 12), StreamVersion: 2},
		{ID: "e3", Type: "t3", Source: "/c", Time: time.Unix(0, 13), Data: []byte("plain"), StreamVersion: 3},
	}, Sealed: [][]byte{nil, nil, []byte("sealed")}}
	if err := w.Begin(ctx); err != nil {
		t.Fatal(err)
	}
	if err := w.InsertEvents(ctx, b); err != nil {
		t.Fatal(err)
	}
	if err := w.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	rows, err := c.QueryContext(ctx, `SELECT position, tenant, stream_id, version, event_id, type, source, time, content_type,
		data_schema, data, correlation_id, causation_id, extensions, recorded_at FROM events ORDER BY position`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var got []string
	for rows.Next() {
		var (
			pos, ver, tm, rec                                 int64
			tenant, stream, id, typ, src, ct, ds, corr, cause string
			data                                              []byte
			ext                                               sql.NullString
		)
		if err := rows.Scan(&pos, &tenant, &stream, &ver, &id, &typ, &src, &tm, &ct, &ds, &data, &corr, &cause, &ext, &rec); err != nil {
			t.Fatal(err)
		}
		got = append(got, fmt.Sprintf("%d %s %s %d %s %s %s %d %q %q %q(nil=%t) %q %q %v %d",
			pos, tenant, stream, ver, id, typ, src, tm, ct, ds, data, data == nil, corr, cause, ext, rec))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	want := []string{
		`1 acme s 1 e1 t1 /a 11 "application/json" "urn:s" "{\"x\":1}"(nil=false) "c" "k" {{"n":5} true} 99`,
		`2 acme s 2 e2 t2 /b 12 "" "" ""(nil=true) "" "" { false} 99`,
		`3 acme s 3 e3 t3 /c 13 "" "" "sealed"(nil=false) "" "" { false} 99`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("rows (-want +got):\n%s", diff)
	}
}

// TestWriterDeferredSavepointBeforeCallerSQL: a request's savepoint,
// deferred until its first statement, is sent before an Update closure's
// own statements (Track(false)), so rolling back to it undoes them; the
// request before it keeps its writes.
func TestWriterDeferredSavepointBeforeCallerSQL(t *testing.T) {
	c, w := tracedWriter(t, &roundTrips{})
	ctx := context.Background()
	must := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	_, err := c.ExecContext(ctx, `CREATE TABLE caller (n int)`)
	must("create", err)
	must("begin", w.Begin(ctx))
	// Request 1: an append.
	must("savepoint 1", w.Savepoint(ctx, driver.RequestScope))
	_, err = w.StreamState(ctx, "acme", "a", true)
	must("state", err)
	must("insert", w.InsertEvents(ctx, testBatch("a", 1, 0, 2)))
	must("release 1", w.Release(ctx, driver.RequestScope))
	// Request 2: a closure that writes, then fails.
	must("savepoint 2", w.Savepoint(ctx, driver.RequestScope))
	w.Track(false)
	_, err = c.ExecContext(ctx, `INSERT INTO caller VALUES (1)`)
	must("caller insert", err)
	must("rollback to 2", w.RollbackTo(ctx, driver.RequestScope))
	must("release 2", w.Release(ctx, driver.RequestScope))
	// Request 3: a closure that fails before any statement.
	must("savepoint 3", w.Savepoint(ctx, driver.RequestScope))
	must("rollback to 3", w.RollbackTo(ctx, driver.RequestScope))
	must("release 3", w.Release(ctx, driver.RequestScope))
	must("commit", w.Commit(ctx))
	var events, callers int
	must("count", c.QueryRowContext(ctx, `SELECT (SELECT count(*) FROM events), (SELECT count(*) FROM caller)`).Scan(&events, &callers))
	if events != 2 || callers != 0 {
		t.Errorf("%d events and %d caller rows committed, want 2 and 0", events, callers)
	}
}
