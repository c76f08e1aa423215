package sqlitedriver

import (
	"context"
	"database/sql"
	"errors"

	"github.com/eventlite/eventlite/store/internal/driver"
)

// streamLifecycle reads the streams row and the stream's newest version;
// the write transaction it runs in holds SQLite's only writer until the
// mark, so no row lock is needed.
func streamLifecycle(ctx context.Context, q driver.Querier, tenant, stream string) (driver.StreamLifecycleState, bool, error) {
	var st driver.StreamLifecycleState
	err := q.QueryRowContext(ctx, `SELECT COALESCE((SELECT MAX(version) FROM events e WHERE e.tenant = s.tenant AND e.stream_id = s.stream_id), 0),
		s.deleted, s.first_version FROM streams s WHERE s.tenant = ? AND s.stream_id = ?`, tenant, stream).Scan(&st.Version, &st.Deleted, &st.First)
	if errors.Is(err, sql.ErrNoRows) {
		return driver.StreamLifecycleState{}, false, nil
	}
	return st, err == nil, err
}

// DeleteStream reads the stream, runs apply, then updates streams and
// deletes the stream's snapshots.
func (Exec) DeleteStream(ctx context.Context, q driver.Querier, tenant, stream string, mark int64, apply driver.LifecycleApply) error {
	st, found, err := streamLifecycle(ctx, q, tenant, stream)
	if err != nil {
		return err
	}
	version, err := apply(st, found)
	if err != nil {
		return err
	}
	_, err = q.ExecContext(ctx, `UPDATE streams SET deleted = ?3, first_version = ?4
			WHERE tenant = ?1 AND stream_id = ?2`, tenant, stream, mark, version+1)
	if err != nil {
		return err
	}
	_, err = q.ExecContext(ctx, `DELETE FROM snapshots WHERE tenant = ? AND stream_id = ?`, tenant, stream)
	return err
}

// TruncateStream reads the stream, runs apply, then updates
// streams.first_version.
func (Exec) TruncateStream(ctx context.Context, q driver.Querier, tenant, stream string, before int64, apply driver.LifecycleApply) error {
	st, found, err := streamLifecycle(ctx, q, tenant, stream)
	if err != nil {
		return err
	}
	if _, err := apply(st, found); err != nil {
		return err
	}
	_, err = q.ExecContext(ctx, `UPDATE streams SET first_version = ?3
			WHERE tenant = ?1 AND stream_id = ?2`, tenant, stream, before)
	return err
}

// UndeleteStream clears the deleted mark.
func (Exec) UndeleteStream(ctx context.Context, q driver.Querier, tenant, stream string) (bool, error) {
	r, err := q.ExecContext(ctx, `UPDATE streams SET deleted = 0 WHERE tenant = ? AND stream_id = ? AND deleted <> 0`, tenant, stream)
	if err != nil {
		return false, err
	}
	n, err := r.RowsAffected()
	return n > 0, err
}

// DeletedStreams lists the marked streams of a prefix.
func (Exec) DeletedStreams(ctx context.Context, q driver.ReadQuerier, prefix string) ([]driver.DeletedStream, error) {
	rows, err := q.QueryContext(ctx, `SELECT tenant, stream_id, deleted FROM streams WHERE substr(stream_id, 1, length(?1)) = ?1 AND deleted <> 0 ORDER BY tenant, stream_id`, prefix)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []driver.DeletedStream
	for rows.Next() {
		var d driver.DeletedStream
		if err := rows.Scan(&d.Tenant, &d.Stream, &d.Mark); err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, rows.Err()
}
