package pgdriver

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/eventlite/eventlite/store/internal/driver"
)

// outboxTestDB opens a pool of three connections on a fresh, migrated
// schema holding n events (positions 1..n, one stream each) and a live
// lease on "relay" held by "me" under token 1, whose fence it returns.
func outboxTestDB(t *testing.T, n int) (*sql.DB, driver.Fence) {
	t.Helper()
	ctx := context.Background()
	db, err := Driver{}.OpenReader(driver.OpenConfig{Path: withSchema(t, freshSchema(t)), BusyTimeout: 10 * time.Second}, 3)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	c, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ms, err := Migrations()
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		if _, err := (Driver{}).ApplyMigration(ctx, c, m, nil); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.ExecContext(ctx, `INSERT INTO events (position, tenant, stream_id, version, event_id, type, source, time, content_type, recorded_at)
		SELECT p, 'default', 's' || p, 1, 'e' || p, 't', 'src', 0, 'application/json', p FROM generate_series(1, $1::bigint) AS p`, n); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ExecContext(ctx, `UPDATE log_head SET position = $1`, n); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ExecContext(ctx, `INSERT INTO leases (resource, owner, token, expires_at, acquired_at)
		VALUES ('relay', 'me', 1, 9223372036854775807, 0)`); err != nil {
		t.Fatal(err)
	}
	return db, driver.Fence{Resource: "relay", Owner: "me", Token: 1}
}

// outboxEntry is what the test compares of an OutboxEntry.
type outboxEntry struct {
	Position  int64
	Attempts  int
	LastError string
	Sequence  uint64
	Published bool
	Dead      bool
}

func outboxTestEntries(t *testing.T, db *sql.DB) ([]outboxEntry, map[string]int64) {
	t.Helper()
	ctx := context.Background()
	es, err := Exec{}.OutboxEntries(ctx, db, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	var out []outboxEntry
	for _, e := range es {
		out = append(out, outboxEntry{e.Position, e.Attempts, e.LastError, e.BrokerSequence, !e.PublishedAt.IsZero(), !e.DeadAt.IsZero()})
	}
	st, err := Exec{}.OutboxStats(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	return out, st.Counters
}

// TestOutboxBatchRepeatsAPosition: PostgreSQL refuses an upsert that
// reaches one row twice; a batch that names a position twice gets what
// SQLite's row-after-row upserts give it. Published: the first sequence,
// counted once. Failed: one attempt each, the last error, each counted.
// Dead: the first error, counted once.
func TestOutboxBatchRepeatsAPosition(t *testing.T) {
	ctx := context.Background()
	db, fence := outboxTestDB(t, 4)
	now := time.Now().UnixNano()
	marked, held, err := Exec{}.MarkPublished(ctx, db, fence, now, []driver.Published{
		{Position: 1, BrokerSequence: 7}, {Position: 1, BrokerSequence: 9}, {Position: 2}, {Position: 99},
	})
	if err != nil || !held || marked != 2 {
		t.Fatalf("mark published: %d %v %v, want 2 marked", marked, held, err)
	}
	if held, err := (Exec{}).RecordFailures(ctx, db, fence, now, []driver.Failure{
		{Position: 3, Error: "a", NextAttemptAt: now}, {Position: 3, Error: "b", NextAttemptAt: now},
	}); err != nil || !held {
		t.Fatalf("record failures: %v %v", held, err)
	}
	if held, err := (Exec{}).MarkDead(ctx, db, fence, now, []driver.Failure{{Position: 4, Error: "x"}, {Position: 4, Error: "y"}}); err != nil || !held {
		t.Fatalf("mark dead: %v %v", held, err)
	}
	es, counters := outboxTestEntries(t, db)
	want := []outboxEntry{
		{Position: 1, Sequence: 7, Published: true},
		{Position: 2, Published: true},
		{Position: 3, Attempts: 2, LastError: "b"},
		{Position: 4, Attempts: 1, LastError: "x", Dead: true},
	}
	if diff := cmp.Diff(want, es); diff != "" {
		t.Errorf("entries (-want +got):\n%s", diff)
	}
	wantCounters := map[string]int64{"published": 2, "retried": 2, "dead_lettered": 1, "requeued": 0, "discarded": 0}
	if diff := cmp.Diff(wantCounters, counters); diff != "" {
		t.Errorf("counters (-want +got):\n%s", diff)
	}
	// W stops below the first pending event (3); C passes what waits
	// behind a failed row of its stream (3 and 4).
	var w, c int64
	if err := db.QueryRowContext(ctx, `SELECT settled, scanned FROM outbox_watermark`).Scan(&w, &c); err != nil {
		t.Fatal(err)
	}
	if w != 2 || c != 4 {
		t.Errorf("watermark settled %d scanned %d, want 2 and 4", w, c)
	}
}

// TestOutboxStaleFenceWritesNothing: a fence whose token is not the
// lease's writes no row, moves no counter and no watermark.
func TestOutboxStaleFenceWritesNothing(t *testing.T) {
	ctx := context.Background()
	db, fence := outboxTestDB(t, 2)
	stale := fence
	stale.Token++
	now := time.Now().UnixNano()
	if _, held, err := (Exec{}).MarkPublished(ctx, db, stale, now, []driver.Published{{Position: 1}}); err != nil || held {
		t.Errorf("mark published under a stale fence: held %v, %v", held, err)
	}
	if held, err := (Exec{}).RecordFailures(ctx, db, stale, now, []driver.Failure{{Position: 1, Error: "x"}}); err != nil || held {
		t.Errorf("record failures under a stale fence: held %v, %v", held, err)
	}
	if held, err := (Exec{}).MarkDead(ctx, db, stale, now, []driver.Failure{{Position: 2, Error: "x"}}); err != nil || held {
		t.Errorf("mark dead under a stale fence: held %v, %v", held, err)
	}
	es, counters := outboxTestEntries(t, db)
	if diff := cmp.Diff([]outboxEntry{{Position: 1}, {Position: 2}}, es); diff != "" {
		t.Errorf("entries (-want +got):\n%s", diff)
	}
	for name, v := range counters {
		if v != 0 {
			t.Errorf("counter %s = %d, want 0", name, v)
		}
	}
}

// TestRecordOperationOneWinner: two transactions that record one
// operation id at once, outside the writer, do not both record it: the
// second waits for the first to commit and returns the first's row.
func TestRecordOperationOneWinner(t *testing.T) {
	ctx := context.Background()
	db, _ := outboxTestDB(t, 0)
	op := driver.OperationRow{Tenant: "default", ID: "op-1", Type: "charge", InputHash: "h1", Result: []byte(`{"n":1}`), CreatedAt: 1}
	if _, ok, err := (Exec{}).Operation(ctx, db, op.Tenant, op.ID); err != nil || ok {
		t.Fatalf("operation before any: %v %v", ok, err)
	}
	tx1, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx1.Rollback()
	if got, found, err := (Exec{}).RecordOperation(ctx, tx1, op); err != nil || found || got.InputHash != "h1" {
		t.Fatalf("first record: %+v %v %v", got, found, err)
	}
	type result struct {
		row   driver.OperationRow
		found bool
		err   error
	}
	done := make(chan result, 1)
	go func() {
		tx2, err := db.BeginTx(ctx, nil)
		if err != nil {
			done <- result{err: err}
			return
		}
		defer tx2.Rollback()
		other := op
		other.InputHash, other.Result = "h2", []byte(`{"n":2}`)
		row, found, err := Exec{}.RecordOperation(ctx, tx2, other)
		if err == nil {
			err = tx2.Commit()
		}
		done <- result{row, found, err}
	}()
	// The second insert waits on the first's uncommitted row: tx1's
	// session blocks another. (Polled outside tx1: a transaction sees
	// pg_stat_activity as it was at its first look.)
	var pid int64
	if err := tx1.QueryRowContext(ctx, `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
		t.Fatal(err)
	}
	for blocked := 0; blocked == 0; {
		select {
		case r := <-done:
			t.Fatalf("the second record did not wait for the first: %+v", r)
		case <-time.After(time.Millisecond):
		}
		if err := db.QueryRowContext(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE $1::int = ANY (pg_blocking_pids(pid))`, pid).Scan(&blocked); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx1.Commit(); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil || !r.found {
		t.Fatalf("second record: found %v, %v; want the first's row", r.found, r.err)
	}
	if diff := cmp.Diff(op, r.row); diff != "" {
		t.Errorf("second record's row (-want +got):\n%s", diff)
	}
	got, ok, err := Exec{}.Operation(ctx, db, op.Tenant, op.ID)
	if err != nil || !ok {
		t.Fatalf("operation: %v %v", ok, err)
	}
	if diff := cmp.Diff(op, got); diff != "" {
		t.Errorf("stored row (-want +got):\n%s", diff)
	}
}
