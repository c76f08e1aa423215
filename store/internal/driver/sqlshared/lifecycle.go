package sqlshared

import (
	"context"
	"database/sql"
	"errors"

	"github.com/eventlite/eventlite/store/internal/driver"
)

// streamLifecycle reads the streams row and the stream's newest version,
// holding the row until the transaction ends (Dialect.ForUpdate: on
// SQLite the writer's lock holds it from the read to the mark).
func (x Exec[D]) streamLifecycle(ctx context.Context, q driver.Querier, tenant, stream string) (driver.StreamLifecycleState, bool, error) {
	var st driver.StreamLifecycleState
	err := q.QueryRowContext(ctx, x.bind(`SELECT COALESCE((SELECT max(version) FROM events e WHERE e.tenant = s.tenant AND e.stream_id = s.stream_id), 0),
		s.deleted, s.first_version FROM streams s WHERE s.tenant = ? AND s.stream_id = ?`+x.dialect().ForUpdate()), tenant, stream).Scan(&st.Version, &st.Deleted, &st.First)
	if errors.Is(err, sql.ErrNoRows) {
		return driver.StreamLifecycleState{}, false, nil
	}
	return st, err == nil, err
}

// DeleteStream reads (and holds) the stream, runs apply, then updates
// streams and deletes the stream's snapshots.
func (x Exec[D]) DeleteStream(ctx context.Context, q driver.Querier, tenant, stream string, mark int64, apply driver.LifecycleApply) error {
	st, found, err := x.streamLifecycle(ctx, q, tenant, stream)
	if err != nil {
		return err
	}
	version, err := apply(st, found)
	if err != nil {
		return err
	}
	_, err = q.ExecContext(ctx, x.bind(`UPDATE streams SET deleted = ?, first_version = ?
			WHERE tenant = ? AND stream_id = ?`), mark, version+1, tenant, stream)
	if err != nil {
		return err
	}
	_, err = q.ExecContext(ctx, x.bind(`DELETE FROM snapshots WHERE tenant = ? AND stream_id = ?`), tenant, stream)
	return err
}

// TruncateStream reads (and holds) the stream, runs apply, then updates
// streams.first_version.
func (x Exec[D]) TruncateStream(ctx context.Context, q driver.Querier, tenant, stream string, before int64, apply driver.LifecycleApply) error {
	st, found, err := x.streamLifecycle(ctx, q, tenant, stream)
	if err != nil {
		return err
	}
	if _, err := apply(st, found); err != nil {
		return err
	}
	_, err = q.ExecContext(ctx, x.bind(`UPDATE streams SET first_version = ?
			WHERE tenant = ? AND stream_id = ?`), before, tenant, stream)
	return err
}

// UndeleteStream clears the deleted mark.
func (x Exec[D]) UndeleteStream(ctx context.Context, q driver.Querier, tenant, stream string) (bool, error) {
	r, err := q.ExecContext(ctx, x.bind(`UPDATE streams SET deleted = 0 WHERE tenant = ? AND stream_id = ? AND deleted <> 0`), tenant, stream)
	if err != nil {
		return false, err
	}
	n, err := r.RowsAffected()
	return n > 0, err
}

// DeletedStreams lists the marked streams of a prefix.
func (x Exec[D]) DeletedStreams(ctx context.Context, q driver.ReadQuerier, prefix string) ([]driver.DeletedStream, error) {
	rows, err := q.QueryContext(ctx, x.bind(`SELECT tenant, stream_id, deleted FROM streams WHERE `+x.dialect().HasPrefix("stream_id")+` AND deleted <> 0 ORDER BY tenant, stream_id`), prefix, prefix)
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
