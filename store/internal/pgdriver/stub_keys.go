package pgdriver

import (
	"context"

	"github.com/eventlite/eventlite/store/internal/driver"
)

// Not yet built on PostgreSQL: every method of this file's areas
// answers driver.ErrUnsupported until it is.

func (Exec) AnyLiveKey(_ context.Context, _ driver.ReadQuerier) (r0 bool, err error) {
	err = driver.ErrUnsupported
	return
}

func (Exec) DataKey(_ context.Context, _ driver.ReadQuerier, _ string, _ string) (r0 driver.DataKeyRow, r1 bool, err error) {
	err = driver.ErrUnsupported
	return
}

func (Exec) InsertDataKey(_ context.Context, _ driver.Querier, _ string, _ string, _ []byte, _ []byte, _ int64) (err error) {
	err = driver.ErrUnsupported
	return
}

func (Exec) ForgetDataKey(_ context.Context, _ driver.Querier, _ string, _ string, _ int64) (r0 bool, r1 bool, err error) {
	err = driver.ErrUnsupported
	return
}

func (Exec) NewestForget(_ context.Context, _ driver.ReadQuerier) (r0 int64, err error) {
	err = driver.ErrUnsupported
	return
}

func (Exec) SubjectStreams(_ context.Context, _ driver.ReadQuerier, _ string, _ string) (r0 []string, err error) {
	err = driver.ErrUnsupported
	return
}

func (Exec) DropSubjectSnapshots(_ context.Context, _ driver.Querier, _ string, _ string) (err error) {
	err = driver.ErrUnsupported
	return
}

func (Exec) EraseCopies(_ context.Context, _ driver.Querier, _ driver.CopyKind, _ string, _ string) (r0 int64, err error) {
	err = driver.ErrUnsupported
	return
}

func (Exec) ScrubErased(_ context.Context, _ driver.Querier) (r0 int64, err error) {
	err = driver.ErrUnsupported
	return
}
