package pgdriver

import (
	"context"

	"github.com/eventlite/eventlite/store/internal/driver"
)

// Not yet built on PostgreSQL: every method of this file's areas
// answers driver.ErrUnsupported until it is.

func (Exec) LoadSnapshot(_ context.Context, _ driver.ReadQuerier, _ string, _ string, _ int) (r0 driver.SnapshotRow, r1 bool, err error) {
	err = driver.ErrUnsupported
	return
}

func (Exec) SaveSnapshot(_ context.Context, _ driver.Querier, _ string, _ string, _ driver.SnapshotRow) (err error) {
	err = driver.ErrUnsupported
	return
}

func (Exec) SetProjectionStatus(_ context.Context, _ driver.Querier, _ string, _ string, _ string, _ int64) (err error) {
	err = driver.ErrUnsupported
	return
}

func (Exec) Projections(_ context.Context, _ driver.ReadQuerier, _ string) (r0 []driver.ProjectionRow, err error) {
	err = driver.ErrUnsupported
	return
}

func (Exec) QueueCounts(_ context.Context, _ driver.ReadQuerier) (r0 driver.QueueCounts, err error) {
	err = driver.ErrUnsupported
	return
}

func (Exec) EffectCounts(_ context.Context, _ driver.ReadQuerier) (r0 []driver.EffectCount, err error) {
	err = driver.ErrUnsupported
	return
}
