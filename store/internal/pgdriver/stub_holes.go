package pgdriver

import (
	"context"

	"github.com/eventlite/eventlite/store/internal/driver"
)

// Not yet built on PostgreSQL: every method of this file's areas
// answers driver.ErrUnsupported until it is.

func (Exec) PositionSpan(_ context.Context, _ driver.ReadQuerier, _ int64, _ int64) (r0 int64, r1 int64, r2 bool, err error) {
	err = driver.ErrUnsupported
	return
}

func (Exec) RemovedRangesIn(_ context.Context, _ driver.ReadQuerier, _ int64, _ int64) (r0 []driver.PositionRun, err error) {
	err = driver.ErrUnsupported
	return
}

func (Exec) PositionGaps(_ context.Context, _ driver.ReadQuerier, _ int64, _ int64) (r0 []driver.PositionRun, err error) {
	err = driver.ErrUnsupported
	return
}

func (Exec) RecordHole(_ context.Context, _ driver.Querier, _ driver.HoleRow, _ int64) (err error) {
	err = driver.ErrUnsupported
	return
}

func (Exec) RecordedHoles(_ context.Context, _ driver.ReadQuerier) (r0 []driver.HoleRow, err error) {
	err = driver.ErrUnsupported
	return
}
