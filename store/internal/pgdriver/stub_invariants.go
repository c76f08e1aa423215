package pgdriver

import (
	"context"

	"github.com/eventlite/eventlite/store/internal/driver"
)

// Not yet built on PostgreSQL: every method of this file's areas
// answers driver.ErrUnsupported until it is.

func (Exec) CheckLog(_ context.Context, _ driver.ReadQuerier, _ string) (r0 []driver.Violations, err error) {
	err = driver.ErrUnsupported
	return
}

func (Exec) IntegrityCheck(_ context.Context, _ driver.ReadQuerier) (r0 []string, err error) {
	err = driver.ErrUnsupported
	return
}

func (Exec) LogFacts(_ context.Context, _ driver.ReadQuerier) (r0 driver.LogFacts, err error) {
	err = driver.ErrUnsupported
	return
}
