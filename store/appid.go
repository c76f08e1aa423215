package store

import (
	"context"
	"fmt"

	"github.com/eventlite/eventlite/store/internal/driver"
)

// SetApplicationID stamps the file's PRAGMA application_id, a number in
// the SQLite header that tools use to tell what wrote a file (eventlite's
// demo marks its database with it, so that a rerun only ever replaces a
// file the demo made; backup.Inspect reads it). It commits with the
// transaction. A store on PostgreSQL, which has no such header, refuses
// it with ErrUnsupported.
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
