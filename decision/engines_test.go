package decision_test

import (
	"context"
	"testing"

	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/storetest"
)

// engine opens a fresh store on one engine; addr is where another
// process opens the same store.
type engine struct {
	name string
	open func(tb testing.TB, opts *store.Options) (s *store.Store, addr string)
}

// engines are SQLite (a file in the test's temp dir) and PostgreSQL (a
// schema of its own, skipped without EVENTLITE_TEST_POSTGRES).
var engines = []engine{
	{"sqlite", func(tb testing.TB, opts *store.Options) (*store.Store, string) {
		path := tb.TempDir() + "/eventlite.db"
		return storetest.MustOpenPath(tb, path, opts), path
	}},
	{"postgres", func(tb testing.TB, opts *store.Options) (*store.Store, string) {
		addr := storetest.PostgresSchema(tb, storetest.PostgresBase(tb))
		s, err := store.Open(context.Background(), addr, opts)
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() {
			if err := s.CheckInvariants(context.Background()); err != nil {
				tb.Errorf("after the test: %v", err)
			}
			_ = s.Close()
		})
		return s, addr
	}},
}

// onEngines runs fn as a subtest per engine.
func onEngines(t *testing.T, fn func(t *testing.T, e engine)) {
	for _, e := range engines {
		t.Run(e.name, func(t *testing.T) { fn(t, e) })
	}
}
