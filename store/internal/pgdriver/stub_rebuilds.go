package pgdriver

import (
	"context"

	"github.com/eventlite/eventlite/store/internal/driver"
)

// Not yet built on PostgreSQL: every method of this file's areas
// answers driver.ErrUnsupported until it is.

func (Exec) LoadRebuild(_ context.Context, _ driver.ReadQuerier, _ string) (r0 driver.RebuildRow, r1 bool, err error) {
	err = driver.ErrUnsupported
	return
}

func (Exec) ListRebuilds(_ context.Context, _ driver.ReadQuerier) (r0 []driver.RebuildRow, err error) {
	err = driver.ErrUnsupported
	return
}

func (Exec) NewRebuildGeneration(_ context.Context, _ driver.Querier, _ string) (r0 int64, err error) {
	err = driver.ErrUnsupported
	return
}

func (Exec) SaveRebuild(_ context.Context, _ driver.Querier, _ driver.RebuildRow) (err error) {
	err = driver.ErrUnsupported
	return
}

func (Exec) DeleteRebuild(_ context.Context, _ driver.Querier, _ string) (err error) {
	err = driver.ErrUnsupported
	return
}

func (Exec) CountEventsBetween(_ context.Context, _ driver.ReadQuerier, _ int64, _ int64, _ []string) (r0 int64, err error) {
	err = driver.ErrUnsupported
	return
}
