package store_test

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
	"github.com/eventlite/eventlite/store/drivertest"
)

// postgresEnv names the variable that holds the test server's address.
const postgresEnv = "EVENTLITE_TEST_POSTGRES"

// TestDriverSuitePostgres runs the shared driver suite against
// PostgreSQL: a fresh schema per test, dropped when it ends; a second
// store on the same schema for another process or a restart. It runs
// when EVENTLITE_TEST_POSTGRES holds a server's URL.
func TestDriverSuitePostgres(t *testing.T) {
	base := os.Getenv(postgresEnv)
	if base == "" {
		t.Skip("PostgreSQL suite skipped: set " + postgresEnv + " to a server's URL (for example postgres://postgres@127.0.0.1:5432/test?sslmode=disable)")
	}
	addrs := map[*store.Store]string{}
	drivertest.Run(t, drivertest.Harness{
		Name: "postgres",
		Open: func(tb testing.TB, opts *store.Options) *store.Store {
			tb.Helper()
			addr := PostgresSchema(tb, base)
			s := openAddr(tb, addr, opts)
			addrs[s] = addr
			return s
		},
		Reopen: func(tb testing.TB, s *store.Store, opts *store.Options) *store.Store {
			tb.Helper()
			addr, ok := addrs[s]
			if !ok {
				tb.Fatal("reopen: the store was not opened by this harness")
			}
			s2 := openAddr(tb, addr, opts)
			addrs[s2] = addr
			return s2
		},
	})
}

// PostgresSchema returns base with eventlite_schema set to a schema no
// other test uses, and drops that schema when tb ends.
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

// openAddr opens a store on addr, closed (after its invariants are
// checked) when tb ends unless the test closed it.
func openAddr(tb testing.TB, addr string, opts *store.Options) *store.Store {
	tb.Helper()
	s, err := store.Open(context.Background(), addr, opts)
	if err != nil {
		tb.Fatalf("open store: %v", err)
	}
	tb.Cleanup(func() {
		select {
		case <-s.Done():
			return
		default:
		}
		if err := s.CheckInvariants(context.Background()); err != nil {
			tb.Errorf("after the test: %v", err)
		}
		if err := s.Close(); err != nil {
			tb.Errorf("close store: %v", err)
		}
	})
	return s
}
