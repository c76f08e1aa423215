package pgdriver

import (
	"context"

	"github.com/eventlite/eventlite/store/internal/driver"
)

// Not yet built on PostgreSQL: every method of this file's areas
// answers driver.ErrUnsupported until it is.

func (Exec) Quarantine(_ context.Context, _ driver.Querier, _ driver.QuarantineRow, _ int64) (err error) {
	err = driver.ErrUnsupported
	return
}

func (Exec) ResolveQuarantine(_ context.Context, _ driver.Querier, _ string, _ int64, _ string, _ int64) (err error) {
	err = driver.ErrUnsupported
	return
}

func (Exec) QuarantineEntries(_ context.Context, _ driver.ReadQuerier, _ string, _ bool) (r0 []driver.QuarantineRow, err error) {
	err = driver.ErrUnsupported
	return
}

func (Exec) OpenQuarantineEntries(_ context.Context, _ driver.ReadQuerier, _ string, _ string) (r0 []driver.QuarantineRow, err error) {
	err = driver.ErrUnsupported
	return
}

func (Exec) QuarantineRetries(_ context.Context, _ driver.ReadQuerier, _ string) (r0 []driver.QuarantineRow, err error) {
	err = driver.ErrUnsupported
	return
}

func (Exec) QuarantineNameKnown(_ context.Context, _ driver.ReadQuerier, _ string) (r0 bool, err error) {
	err = driver.ErrUnsupported
	return
}

func (Exec) MarkQuarantineRetry(_ context.Context, _ driver.Querier, _ string, _ string, _ int64) (err error) {
	err = driver.ErrUnsupported
	return
}

func (Exec) SkipQuarantine(_ context.Context, _ driver.Querier, _ string, _ string, _ int64) (err error) {
	err = driver.ErrUnsupported
	return
}

func (Exec) QuarantinedProjectionStatus(_ context.Context, _ driver.ReadQuerier, _ string) (r0 string, err error) {
	err = driver.ErrUnsupported
	return
}

func (Exec) ResolveRetry(_ context.Context, _ driver.Querier, _ int64, _ string, _ int64) (r0 bool, err error) {
	err = driver.ErrUnsupported
	return
}

func (Exec) RetryFailed(_ context.Context, _ driver.Querier, _ int64, _ string, _ int64) (r0 bool, err error) {
	err = driver.ErrUnsupported
	return
}
