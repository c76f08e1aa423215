package pgdriver

import (
	"context"

	"github.com/eventlite/eventlite/store/internal/driver"
)

// Not yet built on PostgreSQL: every method of this file's areas
// answers driver.ErrUnsupported until it is.

func (Exec) DeleteStream(_ context.Context, _ driver.Querier, _ string, _ string, _ int64, _ driver.LifecycleApply) (err error) {
	err = driver.ErrUnsupported
	return
}

func (Exec) TruncateStream(_ context.Context, _ driver.Querier, _ string, _ string, _ int64, _ driver.LifecycleApply) (err error) {
	err = driver.ErrUnsupported
	return
}
