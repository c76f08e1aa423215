package pgdriver

import (
	"context"

	"github.com/eventlite/eventlite/store/internal/driver"
)

// Not yet built on PostgreSQL: every method of this file's areas
// answers driver.ErrUnsupported until it is.

func (Exec) AcquireLease(_ context.Context, _ driver.Querier, _ string, _ string, _ int64) (r0 driver.LeaseGrant, err error) {
	err = driver.ErrUnsupported
	return
}

func (Exec) RenewLease(_ context.Context, _ driver.Querier, _ driver.Fence, _ int64) (r0 int64, r1 bool, err error) {
	err = driver.ErrUnsupported
	return
}

func (Exec) ReleaseLease(_ context.Context, _ driver.Querier, _ driver.Fence) (err error) {
	err = driver.ErrUnsupported
	return
}

func (Exec) CheckFence(_ context.Context, _ driver.Querier, _ driver.Fence) (r0 bool, err error) {
	err = driver.ErrUnsupported
	return
}

func (Exec) ListLeases(_ context.Context, _ driver.ReadQuerier) (r0 []driver.LeaseRow, err error) {
	err = driver.ErrUnsupported
	return
}
