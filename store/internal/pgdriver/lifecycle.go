package pgdriver

import (
	"context"
	"database/sql"
	"errors"

	"github.com/eventlite/eventlite/store/internal/driver"
)

// streamLifecycle reads the streams row, locking it until the transaction
// ends (FOR UPDATE), and the stream's newest version. The writer's head
// row lock already keeps every other writer out; the row lock keeps the
// read-then-mark atomic even on a transaction that does not hold it.
func streamLifecycle(ctx context.Context, q driver.Querier, tenant, stream string) (driver.StreamLifecycleState, bool, error) {
	var st driver.StreamLifecycleState
	err := q.QueryRowContext(ctx, `SELECT COALESCE((SELECT max(version) FROM events e WHERE e.tenant = s.tenant AND e.stream_id = s.stream_id), 0),
		s.deleted, s.first_version FROM streams s WHERE s.tenant = $1 AND s.stream_id = $2 FOR UPDATE`, tenant, stream).Scan(&st.Version, &st.Deleted, &st.First)
	if errors.Is(err, sql.ErrNoRows) {
		return driver.StreamLifecycleState{}, false, nil
	}
	return st, err == nil, err
}

// DeleteStream reads and locks the stream, runs apply, then updates
// streams and deletes the stream's snapshots.
func (Exec) DeleteStream(ctx context.Context, q driver.Querier, tenant, stream string, mark int64, apply driver.LifecycleApply) error {
	st, found, err := streamLifecycle(ctx, q, tenant, stream)
	if err != nil {
		return err
	}
	version, err := apply(st, found)
	if err != nil {
		return err
	}
	_, err = q.ExecContext(ctx, `UPDATE streams SET deleted = $3, first_version = $4
			WHERE tenant = $1 AND stream_id = $2`, tenant, stream, mark, version+1)
	if err != nil {
		return err
	}
	_, err = q.ExecContext(ctx, `DELETE FROM snapshots WHERE tenant = $1 AND stream_id = $2`, tenant, stream)
	return err
}

// TruncateStream reads and locks the stream, runs apply, then updates
// streams.first_version.
func (Exec) TruncateStream(ctx context.Context, q driver.Querier, tenant, stream string, before int64, apply driver.LifecycleApply) error {
	st, found, err := streamLifecycle(ctx, q, tenant, stream)
	if err != nil {
		return err
	}
	if _, err := apply(st, found); err != nil {
		return err
	}
	_, err = q.ExecContext(ctx, `UPDATE streams SET first_version = $3
			WHERE tenant = $1 AND stream_id = $2`, tenant, stream, before)
	return err
}

// UndeleteStream clears the deleted mark.
func (Exec) UndeleteStream(ctx context.Context, q driver.Querier, tenant, stream string) (bool, error) {
	r, err := q.ExecContext(ctx, `UPDATE streams SET deleted = 0 WHERE tenant = $1 AND stream_id = $2 AND deleted <> 0`, tenant, stream)
	if err != nil {
		return false, err
	}
	n, err := r.RowsAffected()
	return n > 0, err
}

// DeletedStreams lists the marked streams of a prefix.
func (Exec) DeletedStreams(ctx context.Context, q driver.ReadQuerier, prefix string) ([]driver.DeletedStream, error) {
	rows, err := q.QueryContext(ctx, `SELECT tenant, stream_id, deleted FROM streams WHERE left(stream_id, length($1)) = $1 AND deleted <> 0 ORDER BY tenant, stream_id`, prefix)
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
