package pgdriver

import (
	"context"

	"github.com/eventlite/eventlite/store/internal/driver"
)

// Not yet built on PostgreSQL: every method of this file's areas
// answers driver.ErrUnsupported until it is.

func (Exec) ReadOutbox(_ context.Context, _ driver.ReadQuerier, _ int64, _ int64, _ int) (r0 []driver.OutboxRow, err error) {
	err = driver.ErrUnsupported
	return
}

func (Exec) OutboxNextAttempt(_ context.Context, _ driver.ReadQuerier) (r0 int64, r1 bool, err error) {
	err = driver.ErrUnsupported
	return
}

func (Exec) MarkPublished(_ context.Context, _ driver.Querier, _ driver.Fence, _ int64, _ []driver.Published) (r0 int64, r1 bool, err error) {
	err = driver.ErrUnsupported
	return
}

func (Exec) RecordFailures(_ context.Context, _ driver.Querier, _ driver.Fence, _ int64, _ []driver.Failure) (r0 bool, err error) {
	err = driver.ErrUnsupported
	return
}

func (Exec) MarkDead(_ context.Context, _ driver.Querier, _ driver.Fence, _ int64, _ []driver.Failure) (r0 bool, err error) {
	err = driver.ErrUnsupported
	return
}

func (Exec) DeadLetters(_ context.Context, _ driver.ReadQuerier, _ string) (r0 []driver.DeadLetter, err error) {
	err = driver.ErrUnsupported
	return
}

func (Exec) RequeueDeadLetters(_ context.Context, _ driver.Querier, _ string, _ string) (r0 []driver.DeadLetter, err error) {
	err = driver.ErrUnsupported
	return
}

func (Exec) DiscardDeadLetter(_ context.Context, _ driver.Querier, _ int64, _ string, _ string) (r0 driver.DeadLetter, r1 bool, err error) {
	err = driver.ErrUnsupported
	return
}

func (Exec) ParkedStreams(_ context.Context, _ driver.ReadQuerier, _ string) (r0 []driver.ParkedStream, err error) {
	err = driver.ErrUnsupported
	return
}

func (Exec) OutboxStats(_ context.Context, _ driver.ReadQuerier) (r0 driver.OutboxStats, err error) {
	err = driver.ErrUnsupported
	return
}

func (Exec) OutboxEntries(_ context.Context, _ driver.ReadQuerier, _ int64, _ int) (r0 []driver.OutboxEntry, err error) {
	err = driver.ErrUnsupported
	return
}
