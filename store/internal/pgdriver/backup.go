package pgdriver

import (
	"context"
	"database/sql"

	"github.com/eventlite/eventlite/store/internal/driver"
)

// The file methods of driver.Backup copy and replace a database file;
// a database on a server has none, and is backed up and restored with
// the server's own tools (pg_dump and pg_restore, base backups). They
// answer driver.ErrUnsupported, as the interface asks of a server engine.

// OpenFile answers driver.ErrUnsupported: there is no database file.
func (Exec) OpenFile(context.Context, string, driver.FileOptions) (*sql.DB, *sql.Conn, error) {
	return nil, nil, driver.ErrUnsupported
}

// BeginFileRead answers driver.ErrUnsupported (see OpenFile).
func (Exec) BeginFileRead(context.Context, *sql.Conn) (func(), error) {
	return nil, driver.ErrUnsupported
}

// PageSize answers driver.ErrUnsupported: the store copies no pages.
func (Exec) PageSize(context.Context, driver.ReadQuerier) (int64, error) {
	return 0, driver.ErrUnsupported
}

// CopyFile answers driver.ErrUnsupported (see OpenFile).
func (Exec) CopyFile(context.Context, *sql.Conn, string, int, driver.CopyProgress) error {
	return driver.ErrUnsupported
}

// SealFile answers driver.ErrUnsupported (see OpenFile).
func (Exec) SealFile(context.Context, *sql.Conn) error {
	return driver.ErrUnsupported
}

// CopyInto answers driver.ErrUnsupported (see OpenFile).
func (Exec) CopyInto(context.Context, *sql.Conn, string, int64, int, func() error, driver.CopyProgress) error {
	return driver.ErrUnsupported
}

// RaiseSequence raises the head row's last handed-out position to at
// least floor: the next append is given floor+1 or more. q is the
// writer's transaction, which holds the head row already.
func (Exec) RaiseSequence(ctx context.Context, q driver.Querier, floor int64) error {
	_, err := q.ExecContext(ctx, `UPDATE log_head SET position = GREATEST(position, $1)`, floor)
	return err
}

// RecordRestoreHole upserts the hole into position_holes, widening a hole
// recorded at from.
func (Exec) RecordRestoreHole(ctx context.Context, q driver.Querier, from, to int64, detectedBy string, now int64) error {
	_, err := q.ExecContext(ctx, `INSERT INTO position_holes (from_position, to_position, detected_by, detected_at) VALUES ($1, $2, $3, $4)
		ON CONFLICT (from_position) DO UPDATE SET to_position = GREATEST(position_holes.to_position, EXCLUDED.to_position), detected_by = EXCLUDED.detected_by`,
		from, to, detectedBy, now)
	return err
}

// HolesDetectedBy reads position_holes.
func (Exec) HolesDetectedBy(ctx context.Context, q driver.ReadQuerier, detectedBy string) ([]driver.FileHole, error) {
	rows, err := q.QueryContext(ctx, `SELECT from_position, to_position FROM position_holes WHERE detected_by = $1 ORDER BY from_position`, detectedBy)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []driver.FileHole
	for rows.Next() {
		var h driver.FileHole
		if err := rows.Scan(&h.From, &h.To); err != nil {
			return nil, err
		}
		out = append(out, h)
	}
	return out, rows.Err()
}

// EventsUpTo counts the events at positions up to position.
func (Exec) EventsUpTo(ctx context.Context, q driver.ReadQuerier, position int64) (count, highest int64, err error) {
	err = q.QueryRowContext(ctx, `SELECT count(*), COALESCE(max(position), 0) FROM events WHERE position <= $1`, position).Scan(&count, &highest)
	return count, highest, err
}

// RolledBackStreams answers driver.ErrUnsupported: a restore is a file's.
func (Exec) RolledBackStreams(context.Context, *sql.Conn, string) ([]driver.RolledBackStream, error) {
	return nil, driver.ErrUnsupported
}

// RecordVersionGap answers driver.ErrUnsupported (see RolledBackStreams).
func (Exec) RecordVersionGap(context.Context, driver.Querier, driver.RolledBackStream, driver.RestoredEvent, string, int64) error {
	return driver.ErrUnsupported
}

// TakeLeases answers driver.ErrUnsupported (see RolledBackStreams).
func (Exec) TakeLeases(context.Context, *sql.Conn, string, int64) (int64, int64, error) {
	return 0, 0, driver.ErrUnsupported
}

// ReleaseLeases answers driver.ErrUnsupported (see RolledBackStreams).
func (Exec) ReleaseLeases(context.Context, *sql.Conn, string) error {
	return driver.ErrUnsupported
}

// FenceLeases answers driver.ErrUnsupported (see RolledBackStreams).
func (Exec) FenceLeases(context.Context, *sql.Conn, string) error {
	return driver.ErrUnsupported
}

// VersionGapsDetectedBy reads version_gaps (migration 0003).
func (Exec) VersionGapsDetectedBy(ctx context.Context, q driver.ReadQuerier, detectedBy string) ([]driver.RolledBackStream, error) {
	rows, err := q.QueryContext(ctx, `SELECT tenant, stream_id, from_version - 1, to_version FROM version_gaps WHERE detected_by = $1 ORDER BY tenant, stream_id, from_version`, detectedBy)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []driver.RolledBackStream
	for rows.Next() {
		var r driver.RolledBackStream
		if err := rows.Scan(&r.Tenant, &r.Stream, &r.Have, &r.Had); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}
