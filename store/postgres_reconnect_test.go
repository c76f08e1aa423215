package store_test

import (
	"context"
	"database/sql"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/drivertest"
)

// TestPostgresSessionEndedReconnects: when the server ends the writer's
// session (pg_terminate_backend stands for a restart, a network cut or
// the idle-in-transaction timeout of a stopped process), the next append
// takes a new connection and succeeds; and the change poller, whose
// session ended too, still wakes a waiter for another store's commit.
func TestPostgresSessionEndedReconnects(t *testing.T) {
	base := os.Getenv(postgresEnv)
	if base == "" {
		t.Skip("PostgreSQL test skipped: set " + postgresEnv + " to a server's URL")
	}
	ctx := context.Background()
	addr := PostgresSchema(t, base)
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
