package projection_test

import (
	"context"
	"testing"

	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/storetest"
)

// openPostgres opens a store on a fresh schema of the test server, or
// skips the test when EVENTLITE_TEST_POSTGRES is not set. When the test
// ends it checks the store's invariants, closes it and drops the schema.
// (The schema is storetest.PostgresSchema's, as in the store's
// PostgreSQL suite.)
func openPostgres(tb testing.TB) *store.Store {
	tb.Helper()
	base := storetest.PostgresBase(tb)
	addr := storetest.PostgresSchema(tb, base)
	s, err := store.Open(context.Background(), addr, nil)
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
