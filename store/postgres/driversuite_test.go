package postgres_test

import (
	"testing"

	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/drivertest"
	"github.com/eventlite/eventlite/store/internal/testfix"
	_ "github.com/eventlite/eventlite/store/postgres"
	"github.com/eventlite/eventlite/store/storetest"
)

// TestDriverSuitePostgres runs the shared driver suite against
// PostgreSQL: a fresh schema per test, dropped when it ends; a second
// store on the same schema for another process or a restart. It runs
// when EVENTLITE_TEST_POSTGRES holds a server's URL. It lives in this
// package, not in store's, so that its minutes count against a test
// binary of its own (go test's ten-minute limit is per package) and run
// beside store's tests.
func TestDriverSuitePostgres(t *testing.T) {
	base := storetest.PostgresBase(t)
	addrs := map[*store.Store]string{}
	drivertest.Run(t, drivertest.Harness{
		Name: "postgres",
		Open: func(tb testing.TB, opts *store.Options) *store.Store {
			tb.Helper()
			addr := storetest.PostgresSchema(tb, base)
			s := testfix.OpenChecked(tb, addr, opts)
			addrs[s] = addr
			return s
		},
		Reopen: func(tb testing.TB, s *store.Store, opts *store.Options) *store.Store {
			tb.Helper()
			addr, ok := addrs[s]
			if !ok {
				tb.Fatal("reopen: the store was not opened by this harness")
			}
			s2 := testfix.OpenChecked(tb, addr, opts)
			addrs[s2] = addr
			return s2
		},
	})
}
