package pgdriver

import (
	"context"

	"github.com/eventlite/eventlite/store/internal/driver"
)

// Not yet built on PostgreSQL: every method of this file's areas
// answers driver.ErrUnsupported until it is.

func (Exec) RelayHasRun(_ context.Context, _ driver.ReadQuerier) (r0 bool, err error) {
	err = driver.ErrUnsupported
	return
}

func (Exec) EachPendingOutbox(_ context.Context, _ driver.ReadQuerier, _ int64, _ func(tenant, eventID string, recordedAt int64) error) (err error) {
	err = driver.ErrUnsupported
	return
}

func (Exec) RelayBacklog(_ context.Context, _ driver.ReadQuerier) (r0 bool, err error) {
	err = driver.ErrUnsupported
	return
}

func (Exec) ProjectionBacklog(_ context.Context, _ driver.ReadQuerier, _ string) (r0 bool, err error) {
	err = driver.ErrUnsupported
	return
}

func (Exec) FirstRecordedAfter(_ context.Context, _ driver.ReadQuerier, _ int64) (r0 int64, r1 bool, err error) {
	err = driver.ErrUnsupported
	return
}

func (Exec) EachVersionGap(_ context.Context, _ driver.ReadQuerier, _ func(tenant, stream string) error) (err error) {
	err = driver.ErrUnsupported
	return
}

func (Exec) InventoryStats(_ context.Context, _ driver.ReadQuerier, _ string, _ int64) (r0 driver.InventoryStats, err error) {
	err = driver.ErrUnsupported
	return
}

func (Exec) Tenants(_ context.Context, _ driver.ReadQuerier) (r0 []string, err error) {
	err = driver.ErrUnsupported
	return
}
