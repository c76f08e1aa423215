package store_test

import (
	"context"
	"errors"
	"testing"

	"github.com/eventlite/eventlite/internal/inside"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/storetest"
)

// A store on PostgreSQL has no file header: the PostgreSQL driver has no
// file operations (driver.Files), and the bookkeeping's SetApplicationID
// refuses with ErrUnsupported, committing nothing else of the closure.
func TestSetApplicationIDUnsupportedOnPostgres(t *testing.T) {
	ctx := context.Background()
	s, err := store.Open(ctx, storetest.PostgresSchema(t, storetest.PostgresBase(t)), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	err = s.Update(ctx, func(tx *store.Tx) error {
		return store.Bookkeeping(inside.Key{}, tx).SetApplicationID(ctx, 7)
	})
	if !errors.Is(err, store.ErrUnsupported) {
		t.Fatalf("SetApplicationID on PostgreSQL: %v, want ErrUnsupported", err)
	}
}
