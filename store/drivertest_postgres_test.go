package store_test

import (
	"context"
	"testing"

	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/drivertest"
	"github.com/eventlite/eventlite/store/storetest"
)

// TestDriverSuitePostgres runs the shared driver suite against
// PostgreSQL: a fresh schema per test, dropped when it ends; a second
// store on the same schema for another process or a restart. It runs
// when EVENTLITE_TEST_POSTGRES holds a server's URL.
func TestDriverSuitePostgres(t *testing.T) {
	base := storetest.PostgresBase(t)
	addrs := map[*store.Store]string{}
	drivertest.Run(t, drivertest.Harness{
		Name: "postgres",
		Open: func(tb testing.TB, opts *store.Options) *store.Store {
			tb.Helper()
			addr := storetest.PostgresSchema(tb, base)
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
