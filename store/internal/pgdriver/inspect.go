package pgdriver

import (
	"context"

	"github.com/eventlite/eventlite/store/internal/driver"
)

// FileHeader answers driver.ErrUnsupported: a database on a server has no
// file header to read without opening it. Its schema version is the
// migrations table's, which an open store reads.
func (Exec) FileHeader(context.Context, string) (driver.FileHeader, error) {
	return driver.FileHeader{}, driver.ErrUnsupported
}

// SetApplicationID answers driver.ErrUnsupported: the application id is a
// number in a SQLite file's header, which PostgreSQL has no place for.
// Doing nothing instead would let a caller believe the database is marked
// (eventlite demo replaces only a file it marked).
func (Exec) SetApplicationID(context.Context, driver.Querier, int32) error {
	return driver.ErrUnsupported
}
