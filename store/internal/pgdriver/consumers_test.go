package pgdriver

import (
	"context"
	"database/sql"
	"fmt"
	"testing"
	"time"

	"github.com/eventlite/eventlite/store/internal/driver"
)

// consumerTestDB returns a pool on a fresh schema with every migration
// applied.
func consumerTestDB(tb testing.TB) *sql.DB {
	tb.Helper()
	ctx := context.Background()
	db, err := Driver{}.OpenReader(driver.OpenConfig{Path: withSchema(tb, freshSchema(tb)), BusyTimeout: 10 * time.Second}, 4)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	ms, err := Migrations()
	if err != nil {
		tb.Fatal(err)
	}
	c, err := db.Conn(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	defer c.Close()
	for _, m := range ms {
		if _, err := (Driver{}).ApplyMigration(ctx, c, m, nil); err != nil {
			tb.Fatalf("migration %s: %v", m.Name, err)
		}
	}
	return db
}

// consumerTx takes a connection of db and begins a transaction on it; it
// returns the connection and its backend's process id.
func consumerTx(tb testing.TB, db *sql.DB) (*sql.Conn, int) {
	tb.Helper()
	ctx := context.Background()
	c, err := db.Conn(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { c.Close() })
	var pid int
	if err := c.QueryRowContext(ctx, `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
		tb.Fatal(err)
	}
	if _, err := c.ExecContext(ctx, `BEGIN ISOLATION LEVEL READ COMMITTED`); err != nil {
		tb.Fatal(err)
	}
	return c, pid
}

// consumerLockWait returns once the backend pid waits for a lock.
func consumerLockWait(tb testing.TB, db *sql.DB, pid int) {
	tb.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		var waiting bool
		if err := db.QueryRow(`SELECT COALESCE((SELECT wait_event_type = 'Lock' FROM pg_stat_activity WHERE pid = $1), false)`, pid).Scan(&waiting); err != nil {
			tb.Fatal(err)
		}
		if waiting {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	tb.Fatalf("backend %d never waited for a lock", pid)
}

type consumerVersionRead struct {
	version int64
	eventID string
	ok      bool
	err     error
}

// TestConsumerVersionHoldsUntilCommit: a second transaction reading an
// aggregate's version waits until the first, which read it, commits, and
// then reads what the first wrote: for an aggregate without a row yet
// (the advisory lock) and with one (the row lock). The two transactions
// do not take the head row, so that only the read's own locks order them.
func TestConsumerVersionHoldsUntilCommit(t *testing.T) {
	ctx := context.Background()
	db := consumerTestDB(t)
	k := driver.AggregateKey{Tenant: "default", Consumer: "orders", Subject: "order-1"}
	for _, step := range []struct {
		name          string
		before, after int64
		beforeOK      bool
	}{
		{"no row yet", 0, 1, false},
		{"row", 1, 2, true},
	} {
		t.Run(step.name, func(t *testing.T) {
			first, _ := consumerTx(t, db)
			second, pid := consumerTx(t, db)
			v, _, ok, err := Exec{}.ConsumerVersion(ctx, first, k)
			if err != nil || ok != step.beforeOK || v != step.before {
				t.Fatalf("first read: v%d ok=%v (%v), want v%d ok=%v", v, ok, err, step.before, step.beforeOK)
			}
			got := make(chan consumerVersionRead, 1)
			go func() {
				var r consumerVersionRead
				r.version, r.eventID, r.ok, r.err = Exec{}.ConsumerVersion(ctx, second, k)
				got <- r
			}()
			consumerLockWait(t, db, pid)
			select {
			case r := <-got:
				t.Fatalf("the second read did not wait: %+v", r)
			default:
			}
			eventID := fmt.Sprintf("e%d", step.after)
			if err := (Exec{}).SetConsumerVersion(ctx, first, k, step.after, eventID, 1); err != nil {
				t.Fatal(err)
			}
			if _, err := first.ExecContext(ctx, `COMMIT`); err != nil {
				t.Fatal(err)
			}
			r := <-got
			if r.err != nil || !r.ok || r.version != step.after || r.eventID != eventID {
				t.Fatalf("second read after the first committed: %+v, want v%d %s", r, step.after, eventID)
			}
			if _, err := second.ExecContext(ctx, `COMMIT`); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestDeferClashReturnsTheWinner: a second event deferred at a version
// stores nothing and gets the one waiting there; taking it empties the
// slot.
func TestDeferClashReturnsTheWinner(t *testing.T) {
	ctx := context.Background()
	db := consumerTestDB(t)
	k := driver.AggregateKey{Tenant: "default", Consumer: "orders", Subject: "order-1"}
	d := driver.DeferredRow{AggregateKey: k, Version: 3, EventID: "e3", Event: []byte(`{}`), Expected: 2, FirstSeen: 10, Reason: "gap"}
	if _, clash, err := (Exec{}).Defer(ctx, db, d); err != nil || clash {
		t.Fatalf("first defer: clash=%v (%v)", clash, err)
	}
	other := d
	other.EventID, other.FirstSeen = "e3-other", 20
	existing, clash, err := Exec{}.Defer(ctx, db, other)
	if err != nil || !clash || existing.EventID != "e3" || existing.FirstSeen != 10 || existing.Expected != 2 {
		t.Fatalf("second defer: %+v clash=%v (%v)", existing, clash, err)
	}
	taken, ok, err := Exec{}.TakeDeferred(ctx, db, k, 3)
	if err != nil || !ok || taken.EventID != "e3" {
		t.Fatalf("take: %+v ok=%v (%v)", taken, ok, err)
	}
	if _, ok, err := (Exec{}).TakeDeferred(ctx, db, k, 3); err != nil || ok {
		t.Fatalf("second take: ok=%v (%v)", ok, err)
	}

	// Listing is by first sight; dropping the stale takes those at or
	// below a version.
	for v := int64(4); v <= 5; v++ {
		later := d
		later.Version, later.EventID, later.FirstSeen = v, fmt.Sprintf("e%d", v), 10*v
		if _, clash, err := (Exec{}).Defer(ctx, db, later); err != nil || clash {
			t.Fatalf("defer v%d: clash=%v (%v)", v, clash, err)
		}
	}
	versions := func(rows []driver.DeferredRow, err error) []int64 {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		var out []int64
		for _, r := range rows {
			out = append(out, r.Version)
		}
		return out
	}
	if got := versions(Exec{}.ListDeferred(ctx, db, "", 45)); fmt.Sprint(got) != "[4]" {
		t.Errorf("deferred first seen before 45: %v", got)
	}
	if got := versions(Exec{}.ListDeferred(ctx, db, "others", 100)); len(got) != 0 {
		t.Errorf("another consumer's deferred: %v", got)
	}
	if got := versions(Exec{}.DropStaleDeferred(ctx, db, k, 4)); fmt.Sprint(got) != "[4]" {
		t.Errorf("dropped: %v", got)
	}
	if got := versions(Exec{}.ListDeferred(ctx, db, "orders", 100)); fmt.Sprint(got) != "[5]" {
		t.Errorf("left: %v", got)
	}
}
