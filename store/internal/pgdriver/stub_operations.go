package pgdriver

import (
	"context"

	"github.com/eventlite/eventlite/store/internal/driver"
)

// Not yet built on PostgreSQL: every method of this file's areas
// answers driver.ErrUnsupported until it is.

func (Exec) Operation(_ context.Context, _ driver.ReadQuerier, _ string, _ string) (r0 driver.OperationRow, r1 bool, err error) {
	err = driver.ErrUnsupported
	return
}

func (Exec) RecordOperation(_ context.Context, _ driver.Querier, _ driver.OperationRow) (r0 driver.OperationRow, r1 bool, err error) {
	err = driver.ErrUnsupported
	return
}
