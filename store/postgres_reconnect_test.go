package store_test

import (
	"context"
	"database/sql"
	"net/url"
	"testing"
	"time"

	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/drivertest"
	"github.com/eventlite/eventlite/store/storetest"
)

// TestPostgresSessionEndedReconnects: when the server ends the writer's
// session (pg_terminate_backend stands for a restart, a network cut or
// the idle-in-transaction timeout of a stopped process), the next append
// takes a new connection and succeeds; and the change poller, whose
// session ended too, still wakes a waiter for another store's commit.
func TestPostgresSessionEndedReconnects(t *testing.T) {
	base := storetest.PostgresBase(t)
	ctx := context.Background()
	addr := storetest.PostgresSchema(t, base)
	s := openAddr(t, addr, &store.Options{PollInterval: 10 * time.Millisecond})
	other := openAddr(t, addr, nil)
	drivertest.AppendN(t, s, "acme", "s", 1)

	u, _ := url.Parse(addr)
	schema := u.Query().Get("eventlite_schema")
	admin, err := sql.Open("pgx", base)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	// Every session of s's and other's schema: both stores' writers,
	// readers and pollers.
	var ended int
	if err := admin.QueryRowContext(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE application_name LIKE 'eventlite % ' || $1`, schema).Scan(&ended); err != nil {
		t.Fatal(err)
	}
	if ended < 2 {
		t.Fatalf("ended %d sessions of schema %s, want the writers' and the pollers' at least", ended, schema)
	}
	changed := s.Changed()
	if _, err := other.Append(ctx, "acme", "s", store.Any, drivertest.Event(t, "after", nil)); err != nil {
		t.Fatalf("append after the session ended: %v", err)
	}
	select {
	case <-changed:
	case <-time.After(time.Minute):
		t.Fatal("the poller never saw the other store's commit after its session ended")
	}
	if _, err := s.Append(ctx, "acme", "s", store.Any, drivertest.Event(t, "again", nil)); err != nil {
		t.Fatalf("append after the session ended: %v", err)
	}
	n := 0
	for _, err := range s.ReadStream(ctx, "acme", "s", store.ReadStreamOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != 3 {
		t.Fatalf("read %d events, want 3", n)
	}
}

// TestPostgresNotifyWakesWaiters: with a poll interval of an hour, a
// waiter on Changed still wakes at another store's commit: the commit's
// NOTIFY wakes the change poller, which reads the commit counter at once.
// Several rounds, with waits that time out in between (a poll interval
// of its own), show that the listening connection survives both.
func TestPostgresNotifyWakesWaiters(t *testing.T) {
	base := storetest.PostgresBase(t)
	ctx := context.Background()
	addr := storetest.PostgresSchema(t, base)
	s := openAddr(t, addr, &store.Options{PollInterval: time.Hour})
	other := openAddr(t, addr, nil)
	for i := range 3 {
		changed := s.Changed()
		if _, err := other.Append(ctx, "acme", "s", store.Any, drivertest.Event(t, "e", nil)); err != nil {
			t.Fatal(err)
		}
		select {
		case <-changed:
		case <-time.After(time.Minute):
			t.Fatalf("round %d: no wake-up for another store's commit (the poll interval is an hour)", i)
		}
	}
	short := openAddr(t, addr, &store.Options{PollInterval: 20 * time.Millisecond})
	for i := range 3 {
		time.Sleep(100 * time.Millisecond) // several waits time out on the listening connection
		changed := short.Changed()
		if _, err := other.Append(ctx, "acme", "s", store.Any, drivertest.Event(t, "e", nil)); err != nil {
			t.Fatal(err)
		}
		select {
		case <-changed:
		case <-time.After(time.Minute):
			t.Fatalf("round %d: no wake-up after waits that timed out", i)
		}
	}
}
