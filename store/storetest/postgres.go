package storetest

import (
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"net/url"
	"os"
	"testing"

	"github.com/eventlite/eventlite/store"
)

// PostgresEnv names the variable that holds the address of the
// PostgreSQL server the tests run against. Without it they skip.
const PostgresEnv = "EVENTLITE_TEST_POSTGRES"

// PostgresBase returns the test server's address, from
// EVENTLITE_TEST_POSTGRES, or skips tb, saying how to run it, when the
// variable is not set. The test binary links the PostgreSQL driver by
// importing github.com/eventlite/eventlite/store/postgres in a test
// file; the schema is dropped through database/sql's driver "pgx",
// which that import registers. Without the import PostgresBase fails
// tb.
func PostgresBase(tb testing.TB) string {
	tb.Helper()
	base := os.Getenv(PostgresEnv)
	if base == "" {
		tb.Skip("PostgreSQL test skipped: set " + PostgresEnv + " to a server's URL (for example postgres://postgres@127.0.0.1:5432/test?sslmode=disable)")
	}
	if store.PostgresSchemaVersion() == 0 {
		tb.Fatalf("%s is set but the test binary does not link the PostgreSQL driver: add import _ \"github.com/eventlite/eventlite/store/postgres\" to a test file of the package", PostgresEnv)
	}
	return base
}

// PostgresSchema returns base with eventlite_schema set to a schema no
// other test uses, and drops that schema, with everything in it, when tb
// ends. The schema is not created here: a store creates it when it opens.
func PostgresSchema(tb testing.TB, base string) string {
	tb.Helper()
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
	return u.String()
}
