package pgdriver

import (
	"context"
	"database/sql"

	"github.com/eventlite/eventlite/store/internal/driver"
)

// Not yet built on PostgreSQL: every method of this file's areas
// answers driver.ErrUnsupported until it is.

func (Exec) OpenFile(_ context.Context, _ string, _ driver.FileOptions) (r0 *sql.DB, r1 *sql.Conn, err error) {
	err = driver.ErrUnsupported
	return
}

func (Exec) BeginFileRead(_ context.Context, _ *sql.Conn) (r0 func(), err error) {
	err = driver.ErrUnsupported
	return
}

func (Exec) PageSize(_ context.Context, _ driver.ReadQuerier) (r0 int64, err error) {
	err = driver.ErrUnsupported
	return
}

func (Exec) CopyFile(_ context.Context, _ *sql.Conn, _ string, _ int, _ driver.CopyProgress) (err error) {
	err = driver.ErrUnsupported
	return
}

func (Exec) SealFile(_ context.Context, _ *sql.Conn) (err error) {
	err = driver.ErrUnsupported
	return
}

func (Exec) CopyInto(_ context.Context, _ *sql.Conn, _ string, _ int64, _ int, _ func(readable bool) error, _ driver.CopyProgress) (err error) {
	err = driver.ErrUnsupported
	return
}

func (Exec) RaiseSequence(_ context.Context, _ driver.Querier, _ int64) (err error) {
	err = driver.ErrUnsupported
	return
}

func (Exec) RecordRestoreHole(_ context.Context, _ driver.Querier, _ int64, _ int64, _ string, _ int64) (err error) {
	err = driver.ErrUnsupported
	return
}

func (Exec) HolesDetectedBy(_ context.Context, _ driver.ReadQuerier, _ string) (r0 []driver.FileHole, err error) {
	err = driver.ErrUnsupported
	return
}
