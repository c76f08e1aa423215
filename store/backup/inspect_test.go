package backup_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/eventlite/eventlite/internal/inside"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/backup"
	"github.com/eventlite/eventlite/store/storetest"
)

func TestInspectChangesNothing(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	if _, err := backup.Inspect(ctx, filepath.Join(dir, "none.db")); !errors.Is(err, store.ErrNotFound) {
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
	fi, err := backup.Inspect(ctx, path)
	if err != nil || fi.ApplicationID != 0x454c4445 || fi.SchemaVersion != store.SchemaVersion() {
		t.Errorf("Inspect = %+v, %v", fi, err)
	}
}
