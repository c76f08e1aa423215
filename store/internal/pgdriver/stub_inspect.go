package pgdriver

import (
	"context"

	"github.com/eventlite/eventlite/store/internal/driver"
)

// Not yet built on PostgreSQL: every method of this file's areas
// answers driver.ErrUnsupported until it is.

func (Exec) FileHeader(_ context.Context, _ string) (r0 driver.FileHeader, err error) {
	err = driver.ErrUnsupported
	return
}

func (Exec) SetApplicationID(_ context.Context, _ driver.Querier, _ int32) (err error) {
	err = driver.ErrUnsupported
	return
}
