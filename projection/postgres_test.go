package projection_test

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"net/url"
	"os"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx", to drop the test's schema

	"github.com/eventlite/eventlite/store"
)

// postgresEnv names the variable that holds the test server's address.
const postgresEnv = "EVENTLITE_TEST_POSTGRES"

// openPostgres opens a store on a fresh schema of the test server, or
// skips the test when EVENTLITE_TEST_POSTGRES is not set. When the test
// ends it checks the store's invariants, closes it and drops the schema.
// (The same steps as the store's PostgreSQL suite harness.)
func openPostgres(tb testing.TB) *store.Store {
	tb.Helper()
	base := os.Getenv(postgresEnv)
	if base == "" {
		tb.Skip("PostgreSQL test skipped: set " + postgresEnv + " to a server's URL (for example postgres://postgres@127.0.0.1:5432/test?sslmode=disable)")
	}
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		tb.Fatal(err)
	}
	schema := "t_" + hex.EncodeToString(b[:])
	u, err := url.Parse(base)
	if err != nil {
		tb.Fatal(err)
	}
	q := u.Query()
	q.Set("eventlite_schema", schema)
	u.RawQuery = q.Encode()
	tb.Cleanup(func() {
		db, err := sql.Open("pgx", base)
		if err != nil {
			tb.Errorf("drop schema %s: %v", schema, err)
			return
		}
		defer db.Close()
		if _, err := db.Exec(`DROP SCHEMA IF EXISTS "` + schema + `" CASCADE`); err != nil {
			tb.Errorf("drop schema %s: %v", schema, err)
		}
	})
	s, err := store.Open(context.Background(), u.String(), nil)
	if err != nil {
		tb.Fatalf("open store: %v", err)
	}
	tb.Cleanup(func() {
		if err := s.CheckInvariants(context.Background()); err != nil {
			tb.Errorf("after the test: %v", err)
		}
		if err := s.Close(); err != nil {
			tb.Errorf("close store: %v", err)
		}
	})
	return s
}
