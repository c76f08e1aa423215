package storetest_test

import (
	"context"
	"database/sql"
	"net/url"
	"testing"

	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/storetest"
)

// TestPostgresSchemaDropped: the schema PostgresSchema names is a new
// one, which a store creates when it opens, and it is gone once the test
// that asked for it has ended.
func TestPostgresSchemaDropped(t *testing.T) {
	base := storetest.PostgresBase(t)
	db, err := sql.Open("pgx", base)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	exists := func(schema string) bool {
		t.Helper()
		var n int
		if err := db.QueryRow(`SELECT count(*) FROM pg_namespace WHERE nspname = $1`, schema).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n == 1
	}
	var schema string
	t.Run("uses the schema", func(t *testing.T) {
		addr := storetest.PostgresSchema(t, base)
		u, err := url.Parse(addr)
		if err != nil {
			t.Fatal(err)
		}
		schema = u.Query().Get("eventlite_schema")
		if schema == "" || exists(schema) {
			t.Fatalf("schema %q: want a name no schema has yet", schema)
		}
		s, err := store.Open(context.Background(), addr, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if !exists(schema) {
			t.Fatalf("the store did not create schema %s", schema)
		}
	})
	if schema != "" && exists(schema) {
		t.Errorf("schema %s still exists after the test that used it ended", schema)
	}
}

// TestPostgresBaseSkips: without EVENTLITE_TEST_POSTGRES, a test that
// asks for the server is skipped, not failed.
func TestPostgresBaseSkips(t *testing.T) {
	t.Setenv(storetest.PostgresEnv, "")
	skipped := false
	t.Run("needs the server", func(t *testing.T) {
		defer func() { skipped = t.Skipped() }()
		storetest.PostgresBase(t)
		t.Error("PostgresBase returned without a server's address")
	})
	if !skipped {
		t.Error("a test that needs the server was not skipped")
	}
}
