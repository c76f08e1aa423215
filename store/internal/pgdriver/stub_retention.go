package pgdriver

import (
	"context"

	"github.com/eventlite/eventlite/store/internal/driver"
)

// Not yet built on PostgreSQL: every method of this file's areas
// answers driver.ErrUnsupported until it is.

func (Exec) SetRetention(_ context.Context, _ driver.Querier, _ driver.RetentionPolicy) (err error) {
	err = driver.ErrUnsupported
	return
}

func (Exec) UnsetRetention(_ context.Context, _ driver.Querier, _ string) (r0 bool, err error) {
	err = driver.ErrUnsupported
	return
}

func (Exec) RetentionPolicies(_ context.Context, _ driver.ReadQuerier) (r0 []driver.RetentionPolicy, err error) {
	err = driver.ErrUnsupported
	return
}

func (Exec) EachLiveStream(_ context.Context, _ driver.ReadQuerier, _ func(tenant, stream string, version, first int64) error) (err error) {
	err = driver.ErrUnsupported
	return
}

func (Exec) NewestUserVersion(_ context.Context, _ driver.ReadQuerier, _ string, _ string, _ int64) (r0 int64, r1 bool, err error) {
	err = driver.ErrUnsupported
	return
}

func (Exec) NewestUserVersionBefore(_ context.Context, _ driver.ReadQuerier, _ string, _ string, _ int64, _ int64, _ int64) (r0 int64, r1 bool, err error) {
	err = driver.ErrUnsupported
	return
}

func (Exec) NthNewestUserVersion(_ context.Context, _ driver.ReadQuerier, _ string, _ string, _ int64, _ int64) (r0 int64, r1 bool, err error) {
	err = driver.ErrUnsupported
	return
}
