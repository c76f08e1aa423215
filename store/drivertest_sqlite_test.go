package store_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/drivertest"
	"github.com/eventlite/eventlite/store/storetest"
)

// TestDriverSuite runs the shared driver suite against SQLite: a fresh
// file per test, a second store on the same file for another process or
// a restart.
func TestDriverSuite(t *testing.T) {
	drivertest.Run(t, drivertest.Harness{
		Name: "sqlite",
		Open: openSQLite,
		Reopen: func(tb testing.TB, s *store.Store, opts *store.Options) *store.Store {
			tb.Helper()
			return storetest.MustOpenPath(tb, s.Path(), opts)
		},
	})
}

// openSQLite is storetest.MustOpen, but for a store the test closed
// itself (to reopen the file, as after a restart): its invariants are
// then checked by the store that reopened the file.
func openSQLite(tb testing.TB, opts *store.Options) *store.Store {
	tb.Helper()
	o := store.Options{Synchronous: "NORMAL"}
	if opts != nil {
		o = *opts
		if o.Synchronous == "" {
			o.Synchronous = "NORMAL"
		}
	}
	s, err := store.Open(context.Background(), filepath.Join(tb.TempDir(), "eventlite.db"), &o)
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
