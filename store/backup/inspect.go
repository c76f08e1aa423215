package backup

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/eventlite/eventlite/store"
)

// FileInfo describes a database file as Inspect found it.
type FileInfo struct {
	// SchemaVersion is the file's PRAGMA user_version: 0 for a file
	// eventlite never opened.
	SchemaVersion int
	// ApplicationID is the file's PRAGMA application_id (eventlite's
	// demo stamps its database with one).
	ApplicationID int32
}

// Inspect reads a database file's schema version and application id
// without creating, migrating or otherwise changing it. A missing file is
// store.ErrNotFound; a PostgreSQL address *FileOnlyError (ErrFileOnly).
func Inspect(ctx context.Context, path string) (FileInfo, error) {
	if err := fileOnly("inspect", path); err != nil {
		return FileInfo{}, err
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return FileInfo{}, err
	}
	if _, err := os.Stat(abs); errors.Is(err, fs.ErrNotExist) {
		return FileInfo{}, fmt.Errorf("%s: %w", path, store.ErrNotFound)
	}
	h, err := files.FileHeader(ctx, abs)
	if err != nil {
		return FileInfo{}, fmt.Errorf("inspect %s: %w", path, mapErr(err))
	}
	return FileInfo{SchemaVersion: h.SchemaVersion, ApplicationID: h.ApplicationID}, nil
}
