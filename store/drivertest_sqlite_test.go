package store_test

import (
	"path/filepath"
	"testing"

	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/drivertest"
	"github.com/eventlite/eventlite/store/internal/testfix"
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
	return testfix.OpenChecked(tb, filepath.Join(tb.TempDir(), "eventlite.db"), &o)
}
