package pgdriver

import (
	"context"
	"database/sql"
	"reflect"
	"testing"
	"time"

	"github.com/eventlite/eventlite/store/internal/driver"
)

// migratedConn returns a connection to a fresh schema with every
// migration applied.
func migratedConn(t *testing.T) *sql.Conn {
	t.Helper()
	ctx := context.Background()
	db, err := Driver{}.OpenWriter(driver.OpenConfig{Path: withSchema(t, freshSchema(t)), BusyTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	c, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	ms, err := Migrations()
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		if _, err := (Driver{}).ApplyMigration(ctx, c, m, nil); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

// TestMergeRemovedRange pins how a removed run joins the recorded ranges
// it touches: the one just before (ending at or past from-1), the one
// starting just after to, both, or none; the ranges it covers go.
func TestMergeRemovedRange(t *testing.T) {
	ctx := context.Background()
	c := migratedConn(t)
	var ex Exec
	type rg struct{ From, To int64 }
	steps := []struct {
		add  rg
		got  rg
		left []rg
	}{
		{rg{10, 12}, rg{10, 12}, []rg{{10, 12}}},                     // alone
		{rg{13, 14}, rg{10, 14}, []rg{{10, 14}}},                     // joins the one before
		{rg{20, 21}, rg{20, 21}, []rg{{10, 14}, {20, 21}}},           // a gap: alone
		{rg{18, 19}, rg{18, 21}, []rg{{10, 14}, {18, 21}}},           // joins the one after
		{rg{15, 17}, rg{10, 21}, []rg{{10, 21}}},                     // joins both
		{rg{30, 30}, rg{30, 30}, []rg{{10, 21}, {30, 30}}},           // alone again
		{rg{12, 13}, rg{10, 21}, []rg{{10, 21}, {30, 30}}},           // inside one: unchanged
		{rg{40, 41}, rg{40, 41}, []rg{{10, 21}, {30, 30}, {40, 41}}}, // alone
		{rg{31, 39}, rg{30, 41}, []rg{{10, 21}, {30, 41}}},           // both again
		{rg{1, 9}, rg{1, 21}, []rg{{1, 21}, {30, 41}}},               // the first range
	}
	for i, st := range steps {
		from, to, err := ex.MergeRemovedRange(ctx, c, st.add.From, st.add.To, int64(i))
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if got := (rg{from, to}); got != st.got {
			t.Fatalf("step %d: merged %v into %v, want %v", i, st.add, got, st.got)
		}
		rows, err := c.QueryContext(ctx, `SELECT from_position, to_position FROM removed_ranges ORDER BY from_position`)
		if err != nil {
			t.Fatal(err)
		}
		var left []rg
		for rows.Next() {
			var r rg
			if err := rows.Scan(&r.From, &r.To); err != nil {
				t.Fatal(err)
			}
			left = append(left, r)
		}
		rows.Close()
		if !reflect.DeepEqual(left, st.left) {
			t.Fatalf("step %d: recorded %v, want %v", i, left, st.left)
		}
	}
}

// TestScavengeBatch runs a batch's steps twice on one session (the
// temporary table is reused) and checks what they leave: the events and
// their outbox rows gone, their ids refused to a later insert as a
// unique violation, the head row never lowered.
func TestScavengeBatch(t *testing.T) {
	ctx := context.Background()
	c := migratedConn(t)
	var ex Exec
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := c.ExecContext(ctx, q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	insert := func(pos int64, id string) error {
		_, err := c.ExecContext(ctx, `INSERT INTO events (position, tenant, stream_id, version, event_id, type, source, time, content_type, recorded_at)
			VALUES ($1, 'default', 's', $1, $2, 't', 'src', 0, 'application/json', 0)`, pos, id)
		return err
	}
	for p := int64(1); p <= 6; p++ {
		if err := insert(p, "e"+string(rune('0'+p))); err != nil {
			t.Fatal(err)
		}
	}
	exec(`INSERT INTO outbox (position, published_at) VALUES (1, 1), (2, 1), (5, 1)`)
	exec(`UPDATE log_head SET position = 9`) // a restore or an earlier scavenge moved it past the newest event
	for _, batch := range [][]int64{{1, 2, 3}, {5}} {
		exec(`BEGIN`)
		if err := ex.LoadScavengeBatch(ctx, c, batch); err != nil {
			t.Fatal(err)
		}
		for _, step := range []func(context.Context, driver.Querier) error{ex.RecordRemovedIDs, ex.RaisePositionFloor, ex.DeleteBatchOutbox} {
			if err := step(ctx, c); err != nil {
				t.Fatal(err)
			}
		}
		n, err := ex.DeleteBatchEvents(ctx, c)
		if err != nil || n != int64(len(batch)) {
			t.Fatalf("batch %v: deleted %d events (%v)", batch, n, err)
		}
		exec(`COMMIT`)
	}
	var events, outbox, head int64
	if err := c.QueryRowContext(ctx, `SELECT (SELECT count(*) FROM events), (SELECT count(*) FROM outbox), (SELECT position FROM log_head)`).Scan(&events, &outbox, &head); err != nil {
		t.Fatal(err)
	}
	if events != 2 || outbox != 0 || head != 9 {
		t.Fatalf("after the batches: %d events, %d outbox rows, head %d; want 2, 0, 9", events, outbox, head)
	}
	for id, want := range map[string]bool{"e1": true, "e3": true, "e5": true, "e4": false, "e6": false} {
		if got, err := ex.IDRemoved(ctx, c, "default", id); err != nil || got != want {
			t.Errorf("IDRemoved(%s) = %v, %v; want %v", id, got, err, want)
		}
	}
	if got, err := ex.IDRemoved(ctx, c, "other", "e1"); err != nil || got {
		t.Errorf("IDRemoved in another tenant = %v, %v; want false", got, err)
	}
	err := insert(10, "e3")
	if classifyPG(err) != driver.Constraint {
		t.Fatalf("insert of a removed id: %v, want a constraint violation", err)
	}
}
