package sqlitedriver

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/store/internal/driver"
)

// appendSchema is the part of the store's schema the append path touches.
const appendSchema = `CREATE TABLE events (
    position INTEGER PRIMARY KEY, tenant TEXT NOT NULL, stream_id TEXT NOT NULL, version INTEGER NOT NULL,
    event_id TEXT NOT NULL, type TEXT NOT NULL, source TEXT NOT NULL, time INTEGER NOT NULL,
    content_type TEXT NOT NULL, attrs BLOB, recorded_at INTEGER NOT NULL, data BLOB,
    UNIQUE (tenant, stream_id, version), UNIQUE (tenant, event_id));
CREATE TABLE removed_event_ids (tenant TEXT NOT NULL, event_id TEXT NOT NULL, PRIMARY KEY (tenant, event_id)) WITHOUT ROWID;
CREATE TABLE streams (tenant TEXT NOT NULL, stream_id TEXT NOT NULL, created_at INTEGER NOT NULL,
    deleted INTEGER NOT NULL DEFAULT 0, first_version INTEGER NOT NULL DEFAULT 1, PRIMARY KEY (tenant, stream_id));
CREATE TABLE position_floor (one INTEGER PRIMARY KEY CHECK (one = 1), position INTEGER NOT NULL);
INSERT INTO position_floor VALUES (1, 7);`

// newTestWriter opens a new file with appendSchema and then extra, and
// prepares a writer on its one connection; both close when t ends.
func newTestWriter(t testing.TB, extra string) (*sql.Conn, driver.Writer) {
	t.Helper()
	ctx := context.Background()
	db, err := sql.Open("sqlite", filepath.Join(t.TempDir(), "w.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	if _, err := conn.ExecContext(ctx, appendSchema+extra); err != nil {
		t.Fatal(err)
	}
	w, err := Exec{}.PrepareWriter(ctx, conn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Close() })
	return conn, w
}

func batch(first, n int, stream string, ids ...string) driver.EventBatch {
	b := driver.EventBatch{Tenant: "t", Stream: stream, FirstPosition: int64(first), RecordedAt: 1}
	for i := range n {
		id := fmt.Sprintf("%s-%d", stream, i)
		if i < len(ids) && ids[i] != "" {
			id = ids[i]
		}
		b.Events = append(b.Events, envelope.Event{ID: id, Type: "x", Source: "s", StreamVersion: int64(i + 1)})
	}
	return b
}

// TestWriterChunks: a batch longer than InsertChunk is written in
// chunks at consecutive positions after the floor, and a refused chunk
// is named in its OpError and classified Constraint.
func TestWriterChunks(t *testing.T) {
	ctx := context.Background()
	_, w := newTestWriter(t, "")
	if err := w.Begin(ctx); err != nil {
		t.Fatal(err)
	}
	st, err := w.StreamState(ctx, "t", "a", true)
	if err != nil || st != (driver.StreamState{LastPosition: 7}) {
		t.Fatalf("empty log: %+v, %v; want the floor 7 and no row", st, err)
	}
	if err := w.InsertEvents(ctx, batch(8, InsertChunk+8, "a")); err != nil {
		t.Fatal(err)
	}
	if err := w.CreateStream(ctx, "t", "a", 1); err != nil {
		t.Fatal(err)
	}
	st, err = w.StreamState(ctx, "t", "a", true)
	if want := (driver.StreamState{Row: true, Version: InsertChunk + 8, LastPosition: 7 + InsertChunk + 8}); err != nil || st != want {
		t.Fatalf("after %d events: %+v, %v; want %+v", InsertChunk+8, st, err, want)
	}
	ev, ok, err := w.EventByID(ctx, "t", "a-33")
	if err != nil || !ok || ev.Stream != "a" || ev.Version != 34 {
		t.Fatalf("EventByID: %+v %v %v", ev, ok, err)
	}
	if _, ok, err := w.EventByID(ctx, "t", "none"); ok || err != nil {
		t.Fatalf("EventByID of an unknown id: %v %v", ok, err)
	}

	if err := w.Savepoint(ctx, driver.RequestScope); err != nil {
		t.Fatal(err)
	}
	dup := make([]string, InsertChunk+4)
	dup[InsertChunk+2] = "a-0"
	err = w.InsertEvents(ctx, batch(100, InsertChunk+4, "b", dup...))
	var oe *driver.OpError
	if !errors.As(err, &oe) || oe.Op != fmt.Sprintf("insert events %d..%d", InsertChunk, InsertChunk+3) || Classify(err) != driver.Constraint {
		t.Fatalf("duplicate id in the second chunk: %v", err)
	}
	if err := w.RollbackTo(ctx, driver.RequestScope); err != nil {
		t.Fatal(err)
	}
	if err := w.Release(ctx, driver.RequestScope); err != nil {
		t.Fatal(err)
	}
	if st, err := w.StreamState(ctx, "t", "b", true); err != nil || st.Version != 0 || st.LastPosition != 7+InsertChunk+8 {
		t.Fatalf("after the undone batch: %+v, %v", st, err)
	}
	if err := w.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := w.Rollback(ctx); err == nil {
		t.Fatal("Rollback without a transaction: no error")
	}
}

// TestWriterRefusesRemovedIDs: while a scavenge has removed events of a
// tenant, an insert of one of their ids is refused as a unique violation
// naming its chunk, and nothing of the chunk is written; another
// tenant's appends, which have no removed ids, are not looked up and may
// use the id (ids are unique per tenant).
func TestWriterRefusesRemovedIDs(t *testing.T) {
	ctx := context.Background()
	conn, w := newTestWriter(t, `
		INSERT INTO removed_event_ids VALUES ('t', 'gone');`)
	if err := w.Begin(ctx); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = w.Rollback(ctx) }()
	if _, err := w.StreamState(ctx, "t", "a", true); err != nil {
		t.Fatal(err)
	}
	ids := make([]string, InsertChunk+3)
	ids[InsertChunk+1] = "gone"
	err := w.InsertEvents(ctx, batch(8, InsertChunk+3, "a", ids...))
	var (
		oe *driver.OpError
		re *RemovedIDError
	)
	if !errors.As(err, &oe) || oe.Op != fmt.Sprintf("insert events %d..%d", InsertChunk, InsertChunk+2) ||
		!errors.As(err, &re) || re.EventID != "gone" || Classify(err) != driver.Constraint {
		t.Fatalf("a removed id in the second chunk: %v", err)
	}
	var n int
	if err := conn.QueryRowContext(ctx, `SELECT count(*) FROM events WHERE position >= 8 + ?`, InsertChunk).Scan(&n); err != nil || n != 0 {
		t.Fatalf("the refused chunk wrote %d events (%v)", n, err)
	}

	b := batch(100, 2, "a", "x-1", "gone")
	b.Tenant = "u"
	if _, err := w.StreamState(ctx, "u", "a", true); err != nil {
		t.Fatal(err)
	}
	if err := w.InsertEvents(ctx, b); err != nil {
		t.Fatalf("tenant u, which has no removed ids: %v", err)
	}
}

// TestWriterSingleStatementInsert: a batch of up to InsertChunk events
// that fails on its last row leaves none of its rows, outside any
// savepoint, and the transaction goes on with what was written before it
// (what lets the store's group commit skip a request's savepoint); a
// longer batch is not one statement. StreamState without head reads no
// last position.
func TestWriterSingleStatementInsert(t *testing.T) {
	ctx := context.Background()
	conn, w := newTestWriter(t, "")
	if !w.SingleStatementInsert(1) || !w.SingleStatementInsert(InsertChunk) || w.SingleStatementInsert(InsertChunk+1) || w.SingleStatementInsert(0) {
		t.Fatal("SingleStatementInsert: want true for 1..InsertChunk events only")
	}
	if err := w.Begin(ctx); err != nil {
		t.Fatal(err)
	}
	if err := w.InsertEvents(ctx, batch(8, 2, "a")); err != nil {
		t.Fatal(err)
	}
	dup := make([]string, InsertChunk)
	dup[InsertChunk-1] = "a-1"
	if err := w.InsertEvents(ctx, batch(10, InsertChunk, "b", dup...)); Classify(err) != driver.Constraint {
		t.Fatalf("batch whose last id is taken: %v, want a constraint error", err)
	}
	if err := w.InsertEvents(ctx, batch(10, 1, "c")); err != nil {
		t.Fatalf("the transaction after the failed statement: %v", err)
	}
	if err := w.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := conn.QueryRowContext(ctx, `SELECT count(*) FROM events WHERE stream_id = 'b'`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("the failed batch left %d rows (%v), want none", n, err)
	}
	if err := conn.QueryRowContext(ctx, `SELECT count(*) FROM events`).Scan(&n); err != nil || n != 3 {
		t.Fatalf("%d rows (%v), want the 3 of the batches that succeeded", n, err)
	}
	if err := w.Begin(ctx); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = w.Rollback(ctx) }()
	if st, err := w.StreamState(ctx, "t", "a", false); err != nil || st != (driver.StreamState{Version: 2}) {
		t.Fatalf("StreamState without head: %+v, %v; want version 2 and no last position", st, err)
	}
}

// TestWriterInsertValues: InsertEvents, which binds on the driver's own
// connection, stores what database/sql would: no data as NULL, empty data
// as an empty BLOB, no extensions as NULL, texts as TEXT and the time as
// INTEGER nanoseconds (RFC 3339 TEXT outside their range).
func TestWriterInsertValues(t *testing.T) {
	ctx := context.Background()
	conn, w := newTestWriter(t, "")
	b := batch(8, 3, "v")
	b.Events[0].Data = nil
	b.Events[1].Data = []byte{}
	b.Events[1].Extensions = map[string]any{"x": "y"}
	b.Events[1].Time = time.Date(3000, 1, 2, 3, 4, 5, 6, time.UTC)
	b.Events[2].Data = []byte(`{"a":1}`)
	b.Events[2].Time = time.Unix(0, 42)
	if err := w.Begin(ctx); err != nil {
		t.Fatal(err)
	}
	if err := w.InsertEvents(ctx, b); err != nil {
		t.Fatal(err)
	}
	if err := w.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	rows, err := conn.QueryContext(ctx, `SELECT typeof(data), length(data), typeof(attrs), typeof(event_id), typeof(time), quote(time), version FROM events ORDER BY position`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var got []string
	for rows.Next() {
		var td, te, ti, tt, qt string
		var n sql.NullInt64
		var v int64
		if err := rows.Scan(&td, &n, &te, &ti, &tt, &qt, &v); err != nil {
			t.Fatal(err)
		}
		got = append(got, fmt.Sprintf("%s/%d/%v %s %s %s %s v%d", td, n.Int64, n.Valid, te, ti, tt, qt, v))
	}
	want := []string{
		"null/0/false null text text '0001-01-01T00:00:00Z' v1",
		"blob/0/true blob text text '3000-01-02T03:04:05.000000006Z' v2",
		"blob/7/true null text integer 42 v3",
	}
	if !slices.Equal(got, want) {
		t.Errorf("stored\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
