package store_test

import (
	"context"
	"database/sql"
	"net/url"
	"testing"

	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/drivertest"
	"github.com/eventlite/eventlite/store/storetest"
)

// TestPostgresCloseAfterSessionsEnded: when the server has ended every
// session of the store (pg_terminate_backend stands for a restart or an
// operator's kill), Close returns nil: a session that already ended is
// not an error at close.
func TestPostgresCloseAfterSessionsEnded(t *testing.T) {
	base := storetest.PostgresBase(t)
	ctx := context.Background()
	addr := storetest.PostgresSchema(t, base)
	s, err := store.Open(ctx, addr, &store.Options{ReadConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	drivertest.AppendN(t, s, "acme", "s", 2)
	for _, err := range s.ReadStream(ctx, "acme", "s", store.ReadStreamOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
	}
	u, _ := url.Parse(addr)
	schema := u.Query().Get("eventlite_schema")
	admin, err := sql.Open("pgx", base)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	var ended int
	if err := admin.QueryRowContext(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE application_name LIKE 'eventlite % ' || $1`, schema).Scan(&ended); err != nil {
		t.Fatal(err)
	}
	if ended < 2 {
		t.Fatalf("ended %d sessions of schema %s, want the writer's and the poller's at least", ended, schema)
	}
	if err := s.Close(); err != nil {
		t.Errorf("close after %d sessions ended: %v", ended, err)
	}
}
