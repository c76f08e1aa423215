package store_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/eventlite/eventlite/internal/inside"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/storetest"
)

func TestInspectChangesNothing(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	if _, err := store.Inspect(ctx, filepath.Join(dir, "none.db")); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("missing file: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "none.db")); !errors.Is(err, os.ErrNotExist) {
		t.Error("Inspect created the file")
	}
	path := filepath.Join(dir, "a.db")
	s := storetest.MustOpenPath(t, path, nil)
	if err := s.Update(ctx, func(tx *store.Tx) error { return store.Bookkeeping(inside.Key{}, tx).SetApplicationID(ctx, 0x454c4445) }); err != nil {
		t.Fatal(err)
	}
	fi, err := store.Inspect(ctx, path)
	if err != nil || fi.ApplicationID != 0x454c4445 || fi.SchemaVersion != store.SchemaVersion() {
		t.Errorf("Inspect = %+v, %v", fi, err)
	}
}

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
