package pgdriver

import (
	"context"

	"github.com/eventlite/eventlite/store/internal/driver"
)

// Not yet built on PostgreSQL: every method of this file's areas
// answers driver.ErrUnsupported until it is.

func (Exec) ScavengeCandidates(_ context.Context, _ driver.ReadQuerier) (r0 []driver.ScavengeCandidate, err error) {
	err = driver.ErrUnsupported
	return
}

func (Exec) OldestVersion(_ context.Context, _ driver.ReadQuerier, _ string, _ string) (r0 int64, err error) {
	err = driver.ErrUnsupported
	return
}

func (Exec) RemovableBefore(_ context.Context, _ driver.ReadQuerier, _ string, _ string) (r0 int64, err error) {
	err = driver.ErrUnsupported
	return
}

func (Exec) LowestReader(_ context.Context, _ driver.ReadQuerier) (r0 string, r1 string, r2 int64, r3 bool, err error) {
	err = driver.ErrUnsupported
	return
}

func (Exec) OutboxSettled(_ context.Context, _ driver.ReadQuerier) (r0 int64, r1 int64, err error) {
	err = driver.ErrUnsupported
	return
}

func (Exec) WalkStream(_ context.Context, _ driver.ReadQuerier, _ string, _ string, _ int64, _ int64, _ int, _ func(pos, version int64) bool) (err error) {
	err = driver.ErrUnsupported
	return
}

func (Exec) LoadScavengeBatch(_ context.Context, _ driver.Querier, _ []int64) (err error) {
	err = driver.ErrUnsupported
	return
}

func (Exec) RecordRemovedIDs(_ context.Context, _ driver.Querier) (err error) {
	err = driver.ErrUnsupported
	return
}

func (Exec) RaisePositionFloor(_ context.Context, _ driver.Querier) (err error) {
	err = driver.ErrUnsupported
	return
}

func (Exec) MergeRemovedRange(_ context.Context, _ driver.Querier, _ int64, _ int64, _ int64) (r0 int64, r1 int64, err error) {
	err = driver.ErrUnsupported
	return
}

func (Exec) DeleteBatchOutbox(_ context.Context, _ driver.Querier) (err error) {
	err = driver.ErrUnsupported
	return
}

func (Exec) DeleteBatchEvents(_ context.Context, _ driver.Querier) (r0 int64, err error) {
	err = driver.ErrUnsupported
	return
}

func (Exec) IDRemoved(_ context.Context, _ driver.ReadQuerier, _ string, _ string) (r0 bool, err error) {
	err = driver.ErrUnsupported
	return
}

func (Exec) SetSecureDelete(_ context.Context, _ driver.Querier, _ bool) (err error) {
	err = driver.ErrUnsupported
	return
}

func (Exec) IncrementalVacuumOn(_ context.Context, _ driver.Querier) (r0 bool, err error) {
	err = driver.ErrUnsupported
	return
}

func (Exec) IncrementalVacuum(_ context.Context, _ driver.Querier, _ int) (err error) {
	err = driver.ErrUnsupported
	return
}

func (Exec) FreePages(_ context.Context, _ driver.Querier) (r0 int64, err error) {
	err = driver.ErrUnsupported
	return
}

func (Exec) SetIncrementalVacuum(_ context.Context, _ driver.Querier) (err error) {
	err = driver.ErrUnsupported
	return
}

func (Exec) Vacuum(_ context.Context, _ driver.Querier) (err error) {
	err = driver.ErrUnsupported
	return
}

func (Exec) CheckpointWAL(_ context.Context, _ driver.ReadQuerier) (r0 bool, r1 int64, r2 int64, err error) {
	err = driver.ErrUnsupported
	return
}
