package pgdriver

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/eventlite/eventlite/store/internal/driver"
)

// TestWriterAppendGroup: a group of appends the server decides
// (AppendGroup) is one round trip, and the COMMIT a second, whatever the
// group holds: appends that hold, to a new, an existing, a soft-deleted
// stream, and appends refused for each check (a failed expectation, a
// hard-deleted stream, an id stored, an id a scavenge removed). A refused
// append writes nothing, fails no statement and leaves no gap: the next
// append's positions follow the last one written. Each decision carries
// the state read before the append.
func TestWriterAppendGroup(t *testing.T) {
	rt := &roundTrips{}
	c, wi := tracedWriter(t, rt)
	w := wi.(driver.GroupWriter)
	ctx := context.Background()
	for _, q := range []string{
		`INSERT INTO streams (tenant, stream_id, created_at, deleted) VALUES ('acme', 'soft', 1, 1), ('acme', 'hard', 1, 2)`,
		`INSERT INTO removed_event_ids (tenant, event_id) VALUES ('acme', 'gone')`,
	} {
		if _, err := c.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	anyV := func(b driver.EventBatch) driver.DecidedBatch {
		return driver.DecidedBatch{EventBatch: b, Lo: math.MinInt64, Hi: math.MaxInt64}
	}
	exact := func(v int64, b driver.EventBatch) driver.DecidedBatch {
		return driver.DecidedBatch{EventBatch: b, Lo: v, Hi: v}
	}
	bs := []driver.DecidedBatch{
		exact(0, testBatch("a", 0, 0, 3)),            // new stream: positions 1-3
		exact(3, testBatch("a", 0, 3, 2)),            // holds: 4-5
		exact(3, testBatch("a", 0, 9, 1)),            // a is at 5: refused
		anyV(testBatch("hard", 0, 0, 1)),             // hard-deleted: refused
		anyV(testBatch("b", 0, 0, 2, "", "a-2")),     // a-2 stored: refused
		anyV(testBatch("b", 0, 0, 2, "gone")),        // removed by a scavenge: refused
		exact(0, testBatch("soft", 0, 0, 1)),         // soft-deleted counts as absent: revived at 6
		anyV(testBatch("c", 0, 0, 1)),                // 7
		exact(0, testBatch("c", 0, 0, 1, "c-other")), // c is at 1: refused
	}
	out := make([]driver.Decision, len(bs))
	// Warm the statements: the count starts with them prepared, as the
	// store's writer runs them.
	if _, err := w.AppendGroup(ctx, bs[:1], out, false); err != nil {
		t.Fatal(err)
	}
	if err := wi.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	rt.n.Store(0)
	rt.log = nil
	if failed, err := w.AppendGroup(ctx, bs, out, false); err != nil {
		t.Fatalf("batch %d: %v", failed, err)
	}
	if err := wi.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if got := rt.n.Load(); got != 2 {
		t.Errorf("%d round trips, want 2:\n%s", got, strings.Join(rt.log, "\n"))
	}
	st := func(row bool, deleted, version, last int64, ok bool) driver.Decision {
		return driver.Decision{State: driver.StreamState{Row: row, Deleted: deleted, Version: version, LastPosition: last}, Inserted: ok}
	}
	want := []driver.Decision{
		st(false, 0, 0, 0, true),
		st(true, 0, 3, 3, true),
		st(true, 0, 5, 5, false),
		st(true, 2, 0, 5, false),
		st(false, 0, 0, 5, false),
		st(false, 0, 0, 5, false),
		st(true, 1, 0, 5, true),
		st(false, 0, 0, 6, true),
		st(true, 0, 1, 7, false),
	}
	if diff := cmp.Diff(want, out); diff != "" {
		t.Errorf("decisions (-want +got):\n%s", diff)
	}
	type row struct {
		Pos     int64
		Stream  string
		Version int64
		ID      string
	}
	var got []row
	rows, err := c.QueryContext(ctx, `SELECT position, stream_id, version, event_id FROM events ORDER BY position`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var r row
		if err := rows.Scan(&r.Pos, &r.Stream, &r.Version, &r.ID); err != nil {
			t.Fatal(err)
		}
		got = append(got, r)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	wantRows := []row{{1, "a", 1, "a-1"}, {2, "a", 2, "a-2"}, {3, "a", 3, "a-3"}, {4, "a", 4, "a-4"}, {5, "a", 5, "a-5"},
		{6, "soft", 1, "soft-1"}, {7, "c", 1, "c-1"}}
	if diff := cmp.Diff(wantRows, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	var head int64
	var streams string
	if err := c.QueryRowContext(ctx, `SELECT (SELECT position FROM log_head),
		(SELECT string_agg(stream_id || ':' || deleted, ',' ORDER BY stream_id) FROM streams)`).Scan(&head, &streams); err != nil {
		t.Fatal(err)
	}
	if head != 7 || streams != "a:0,c:0,hard:2,soft:0" {
		t.Errorf("head %d, streams %s; want 7 and a:0,c:0,hard:2,soft:0", head, streams)
	}
}

// TestWriterAppendGroupFailure: a statement that fails (here a trigger
// refusing a streams row) reports its batch's index, and nothing of the
// group stays: the driver rolled it back.
func TestWriterAppendGroupFailure(t *testing.T) {
	c, wi := tracedWriter(t, &roundTrips{})
	w := wi.(driver.GroupWriter)
	ctx := context.Background()
	for _, q := range []string{
		`CREATE FUNCTION boom() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'boom refused'; END $$`,
		`CREATE TRIGGER boom BEFORE INSERT ON streams FOR EACH ROW WHEN (NEW.stream_id = 'boom') EXECUTE FUNCTION boom()`,
	} {
		if _, err := c.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	bs := []driver.DecidedBatch{
		{EventBatch: testBatch("a", 0, 0, 2), Lo: 0, Hi: 0},
		{EventBatch: testBatch("boom", 0, 0, 1), Lo: 0, Hi: 0},
		{EventBatch: testBatch("c", 0, 0, 1), Lo: 0, Hi: 0},
	}
	failed, err := w.AppendGroup(ctx, bs, make([]driver.Decision, len(bs)), false)
	if err == nil || failed != 1 {
		t.Fatalf("failed %d, %v; want batch 1 and its error", failed, err)
	}
	var n, head int64
	if err := c.QueryRowContext(ctx, `SELECT (SELECT count(*) FROM events), (SELECT position FROM log_head)`).Scan(&n, &head); err != nil {
		t.Fatalf("after the failure (is a transaction left open?): %v", err)
	}
	if n != 0 || head != 0 {
		t.Errorf("%d events, head %d after a failed group; want none", n, head)
	}
}

// TestWriterAppendGroupWithCommit: a group sent with its COMMIT is one
// round trip and commits when every append holds; when one is refused,
// its statement fails, the COMMIT never runs, and nothing of the group
// stays (the store then sends it again without the COMMIT).
func TestWriterAppendGroupWithCommit(t *testing.T) {
	rt := &roundTrips{}
	c, wi := tracedWriter(t, rt)
	w := wi.(driver.GroupWriter)
	ctx := context.Background()
	count := func() (n, head int64) {
		t.Helper()
		if err := c.QueryRowContext(ctx, `SELECT (SELECT count(*) FROM events), (SELECT position FROM log_head)`).Scan(&n, &head); err != nil {
			t.Fatalf("count (is a transaction left open?): %v", err)
		}
		return n, head
	}
	hold := []driver.DecidedBatch{
		{EventBatch: testBatch("a", 0, 0, 2), Lo: 0, Hi: 0},
		{EventBatch: testBatch("b", 0, 0, 1), Lo: 0, Hi: 0},
	}
	out := make([]driver.Decision, 3)
	// Warm the statements, then count.
	if _, err := w.AppendGroup(ctx, hold[:1], out, true); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ExecContext(ctx, `DELETE FROM events; DELETE FROM streams; UPDATE log_head SET position = 0`); err != nil {
		t.Fatal(err)
	}
	rt.n.Store(0)
	rt.log = nil
	if failed, err := w.AppendGroup(ctx, hold, out, true); err != nil {
		t.Fatalf("batch %d: %v", failed, err)
	}
	if got := rt.n.Load(); got != 1 {
		t.Errorf("%d round trips, want 1:\n%s", got, strings.Join(rt.log, "\n"))
	}
	if out[0].State.LastPosition != 0 || out[1].State.LastPosition != 2 || !out[0].Inserted || !out[1].Inserted {
		t.Errorf("decisions %+v", out[:2])
	}
	if n, head := count(); n != 3 || head != 3 {
		t.Errorf("%d events, head %d; want 3 and 3 committed", n, head)
	}
	refused := []driver.DecidedBatch{
		{EventBatch: testBatch("c", 0, 0, 1), Lo: 0, Hi: 0},
		{EventBatch: testBatch("a", 0, 0, 1), Lo: 0, Hi: 0}, // a is at 2: refused
		{EventBatch: testBatch("d", 0, 0, 1), Lo: 0, Hi: 0},
	}
	failed, err := w.AppendGroup(ctx, refused, out, true)
	if err == nil || failed != 1 {
		t.Fatalf("failed %d, %v; want batch 1 refused", failed, err)
	}
	if n, head := count(); n != 3 || head != 3 {
		t.Errorf("%d events, head %d after a refused group; want 3 and 3: nothing of it", n, head)
	}
}
