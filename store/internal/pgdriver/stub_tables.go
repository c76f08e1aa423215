package pgdriver

import (
	"context"

	"github.com/eventlite/eventlite/store/internal/driver"
)

// Not yet built on PostgreSQL: every method of this file's areas
// answers driver.ErrUnsupported until it is.

func (Exec) DropTable(_ context.Context, _ driver.Querier, _ string) (err error) {
	err = driver.ErrUnsupported
	return
}

func (Exec) CountRows(_ context.Context, _ driver.ReadQuerier, _ string) (r0 int64, err error) {
	err = driver.ErrUnsupported
	return
}

func (Exec) CountUnmatched(_ context.Context, _ driver.ReadQuerier, _ string, _ string, _ []string) (r0 int64, err error) {
	err = driver.ErrUnsupported
	return
}

func (Exec) CountChanged(_ context.Context, _ driver.ReadQuerier, _ string, _ string, _ []string, _ []string) (r0 int64, err error) {
	err = driver.ErrUnsupported
	return
}

func (Exec) CountSurplus(_ context.Context, _ driver.ReadQuerier, _ string, _ string, _ []string) (r0 int64, err error) {
	err = driver.ErrUnsupported
	return
}

func (Exec) QueryOnly(_ context.Context, _ driver.Querier, _ bool) (err error) {
	err = driver.ErrUnsupported
	return
}
