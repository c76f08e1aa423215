package serve

import (
	"context"
	"database/sql"
	"iter"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/storetest"
)

// On PostgreSQL, the server ends the session of the hub's read while the
// read waits (pg_terminate_backend, as a restart or a network cut does):
// the hub logs the outage once, reads again on a new session, and the
// live reader receives every event exactly once.
//
// To end that session and no other, the test holds the hub before its
// read, locks the events table, lets the read start (it waits on the
// lock), and ends the session that waits.
func TestHubRecoversFromATerminatedPostgresSession(t *testing.T) {
	base := storetest.PostgresBase(t)
	ctx := context.Background()
	addr := storetest.PostgresSchema(t, base)
	u, err := url.Parse(addr)
	if err != nil {
		t.Fatal(err)
	}
	schema := u.Query().Get("eventlite_schema")
	s, err := store.Open(ctx, addr, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Logf("close the store after its session was ended: %v", err)
		}
	})
	admin, err := sql.Open("pgx", base)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()

	logs := &logLines{}
	h, url := hubServer(t, s, logs)
	var armed atomic.Bool
	arrived, release := make(chan struct{}), make(chan struct{})
	inner := h.hub.read
	h.hub.read = func(ctx context.Context, o store.ReadAllOptions) iter.Seq2[envelope.Event, error] {
		if o.Tenant == "" && armed.CompareAndSwap(true, false) {
			close(arrived)
			<-release
		}
		return inner(ctx, o)
	}

	appendN(t, s, "default", 1)
	c := dialSSE(t, url+"/v1/tenants/default/events")
	if got := c.ids(1); got != "1" {
		t.Fatalf("history %s", got)
	}
	armed.Store(true)
	appendN(t, s, "default", 2) // positions 2 and 3: the hub holds before reading them
	<-arrived
	tx, err := admin.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback() }()
	if _, err := tx.ExecContext(ctx, `LOCK TABLE "`+schema+`".events IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	close(release)
	// The hub's read waits on the lock; end the session that waits. No
	// signal says when the read reached the lock: poll the server.
	deadline := time.Now().Add(time.Minute)
	for ended := 0; ended == 0; {
		if time.Now().After(deadline) {
			t.Fatal("no session of the store waited on the lock: the hub did not read")
		}
		if err := admin.QueryRowContext(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
			WHERE application_name LIKE 'eventlite % ' || $1 AND wait_event_type = 'Lock'`, schema).Scan(&ended); err != nil {
			t.Fatal(err)
		}
		if ended == 0 {
			time.Sleep(5 * time.Millisecond)
		}
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}

	appendN(t, s, "default", 1) // position 4, after the outage
	if got := c.ids(3); got != "2,3,4" {
		t.Fatalf("after the session ended the reader got %s, want 2,3,4 (no gap, no duplicate)", got)
	}
	if n := logs.count(hubOutageMsg); n != 1 {
		t.Errorf("the outage was logged %d times, want once:\n%s", n, logs)
	}
	if n := logs.count(hubRecoveryMsg); n != 1 {
		t.Errorf("the recovery was logged %d times, want once:\n%s", n, logs)
	}
}
