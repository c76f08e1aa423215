package store

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/eventlite/eventlite/store/internal/driver"
)

// FileInfo describes a database file as Inspect found it.
type FileInfo struct {
	// SchemaVersion is the file's PRAGMA user_version: 0 for a file
	// eventlite never opened.
	SchemaVersion int
	// ApplicationID is the file's PRAGMA application_id (see
	// Bookkeeping's SetApplicationID).
	ApplicationID int32
}

// Inspect reads a database file's schema version and application id
// without creating, migrating or otherwise changing it. A missing file is
// ErrNotFound; a PostgreSQL address *FileOnlyError (ErrFileOnly).
func Inspect(ctx context.Context, path string) (FileInfo, error) {
	if err := fileOnly("inspect", path); err != nil {
		return FileInfo{}, err
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return FileInfo{}, err
	}
	if _, err := os.Stat(abs); errors.Is(err, fs.ErrNotExist) {
		return FileInfo{}, fmt.Errorf("%s: %w", path, ErrNotFound)
	}
	h, err := fileExec.FileHeader(ctx, abs)
	if err != nil {
		return FileInfo{}, fmt.Errorf("inspect %s: %w", path, mapErr(err))
	}
	return FileInfo{SchemaVersion: h.SchemaVersion, ApplicationID: h.ApplicationID}, nil
}

// SetApplicationID stamps the file's PRAGMA application_id, a number in
// the SQLite header that tools use to tell what wrote a file (eventlite's
// demo marks its database with it, so that a rerun only ever replaces a
// file the demo made). It commits with the transaction. A store on
// PostgreSQL, which has no such header, refuses it with ErrUnsupported.
func (tx txBook) SetApplicationID(ctx context.Context, id int32) error {
	if err := tx.check(); err != nil {
		return err
	}
	files, ok := tx.s.ex.(driver.Files)
	if !ok {
		return fmt.Errorf("store: set the application id of %s: %w: the database has no file header", tx.s.path, ErrUnsupported)
	}
	return mapErr(files.SetApplicationID(ctx, tx.s.wconn, id))
}
