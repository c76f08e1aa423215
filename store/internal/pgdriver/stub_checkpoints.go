package pgdriver

import (
	"context"

	"github.com/eventlite/eventlite/store/internal/driver"
)

// Not yet built on PostgreSQL: every method of this file's areas
// answers driver.ErrUnsupported until it is.

func (Exec) Checkpoint(_ context.Context, _ driver.ReadQuerier, _ string) (r0 int64, err error) {
	err = driver.ErrUnsupported
	return
}

func (Exec) SetCheckpoint(_ context.Context, _ driver.Querier, _ string, _ int64, _ *driver.Fence, _ int64) (r0 bool, err error) {
	err = driver.ErrUnsupported
	return
}

func (Exec) Checkpoints(_ context.Context, _ driver.ReadQuerier) (r0 map[string]int64, err error) {
	err = driver.ErrUnsupported
	return
}
