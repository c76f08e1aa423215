package pgdriver

import (
	"context"

	"github.com/eventlite/eventlite/store/internal/driver"
)

// Not yet built on PostgreSQL: every method of this file's areas
// answers driver.ErrUnsupported until it is.

func (Exec) InboxInsert(_ context.Context, _ driver.Querier, _ driver.InboxMessage, _ int64) (r0 bool, err error) {
	err = driver.ErrUnsupported
	return
}

func (Exec) ConsumerVersion(_ context.Context, _ driver.Querier, _ driver.AggregateKey) (r0 int64, r1 string, r2 bool, err error) {
	err = driver.ErrUnsupported
	return
}

func (Exec) SetConsumerVersion(_ context.Context, _ driver.Querier, _ driver.AggregateKey, _ int64, _ string, _ int64) (err error) {
	err = driver.ErrUnsupported
	return
}

func (Exec) Defer(_ context.Context, _ driver.Querier, _ driver.DeferredRow) (r0 driver.DeferredRow, r1 bool, err error) {
	err = driver.ErrUnsupported
	return
}

func (Exec) TakeDeferred(_ context.Context, _ driver.Querier, _ driver.AggregateKey, _ int64) (r0 driver.DeferredRow, r1 bool, err error) {
	err = driver.ErrUnsupported
	return
}

func (Exec) DropStaleDeferred(_ context.Context, _ driver.Querier, _ driver.AggregateKey, _ int64) (r0 []driver.DeferredRow, err error) {
	err = driver.ErrUnsupported
	return
}

func (Exec) ListDeferred(_ context.Context, _ driver.ReadQuerier, _ string, _ int64) (r0 []driver.DeferredRow, err error) {
	err = driver.ErrUnsupported
	return
}

func (Exec) RecordConflict(_ context.Context, _ driver.Querier, _ driver.ConflictRow, _ int64) (err error) {
	err = driver.ErrUnsupported
	return
}

func (Exec) ListConflicts(_ context.Context, _ driver.ReadQuerier, _ string) (r0 []driver.ConflictRow, err error) {
	err = driver.ErrUnsupported
	return
}

func (Exec) CountConsumer(_ context.Context, _ driver.Querier, _ string, _ int, _ int, _ int) (err error) {
	err = driver.ErrUnsupported
	return
}

func (Exec) ConsumerStats(_ context.Context, _ driver.ReadQuerier, _ string) (r0 driver.ConsumerStatsRow, err error) {
	err = driver.ErrUnsupported
	return
}
