package sqlshared

import (
	"context"
	"database/sql"
	"errors"

	"github.com/eventlite/eventlite/store/internal/driver"
)

// retentionLimit stores a limit of 0 (none) as NULL.
func retentionLimit(v int64) any {
	if v == 0 {
		return nil
	}
	return v
}

// SetRetention upserts into retention_policies.
func (x Exec[D]) SetRetention(ctx context.Context, q driver.Querier, p driver.RetentionPolicy) error {
	_, err := q.ExecContext(ctx, x.bind(`INSERT INTO retention_policies (prefix, max_age, max_count, updated_at) VALUES (?, ?, ?, ?)
			ON CONFLICT (prefix) DO UPDATE SET max_age = excluded.max_age, max_count = excluded.max_count, updated_at = excluded.updated_at`),
		p.Prefix, retentionLimit(p.MaxAge), retentionLimit(p.MaxCount), p.UpdatedAt)
	return err
}

// UnsetRetention deletes from retention_policies.
func (x Exec[D]) UnsetRetention(ctx context.Context, q driver.Querier, prefix string) (bool, error) {
	res, err := q.ExecContext(ctx, x.bind(`DELETE FROM retention_policies WHERE prefix = ?`), prefix)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n > 0, err
}

// RetentionPolicies reads retention_policies.
func (Exec[D]) RetentionPolicies(ctx context.Context, q driver.ReadQuerier) ([]driver.RetentionPolicy, error) {
	rows, err := q.QueryContext(ctx, `SELECT prefix, max_age, max_count, updated_at FROM retention_policies ORDER BY prefix`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []driver.RetentionPolicy
	for rows.Next() {
		var p driver.RetentionPolicy
		var age, count sql.NullInt64
		if err := rows.Scan(&p.Prefix, &age, &count, &p.UpdatedAt); err != nil {
			return out, err
		}
		p.MaxAge, p.MaxCount = age.Int64, count.Int64
		out = append(out, p)
	}
	return out, rows.Err()
}

// EachLiveStream reads the streams with deleted = 0.
func (Exec[D]) EachLiveStream(ctx context.Context, q driver.ReadQuerier, fn func(tenant, stream string, version, first int64) error) error {
	rows, err := q.QueryContext(ctx, `SELECT s.tenant, s.stream_id, COALESCE((SELECT max(version) FROM events e WHERE e.tenant = s.tenant AND e.stream_id = s.stream_id), 0),
		s.first_version FROM streams s WHERE s.deleted = 0`)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var tenant, stream string
		var version, first int64
		if err := rows.Scan(&tenant, &stream, &version, &first); err != nil {
			return err
		}
		if err := fn(tenant, stream, version, first); err != nil {
			return err
		}
	}
	return rows.Err()
}

// NewestUserVersion reads max(version) of the user events.
func (x Exec[D]) NewestUserVersion(ctx context.Context, q driver.ReadQuerier, tenant, stream string, from int64) (int64, bool, error) {
	var v sql.NullInt64
	err := q.QueryRowContext(ctx, x.bind(`SELECT max(version) FROM events WHERE tenant = ? AND stream_id = ? AND version >= ? AND `+x.dialect().UserEvent()),
		tenant, stream, from).Scan(&v)
	return v.Int64, v.Valid, err
}

// NewestUserVersionBefore reads max(version) of the user events recorded
// before the cutoff.
func (x Exec[D]) NewestUserVersionBefore(ctx context.Context, q driver.ReadQuerier, tenant, stream string, from, below, recordedBefore int64) (int64, bool, error) {
	var v sql.NullInt64
	err := q.QueryRowContext(ctx, x.bind(`SELECT max(version) FROM events WHERE tenant = ? AND stream_id = ? AND version >= ? AND version < ? AND recorded_at < ? AND `+x.dialect().UserEvent()),
		tenant, stream, from, below, recordedBefore).Scan(&v)
	return v.Int64, v.Valid, err
}

// NthNewestUserVersion reads the user events newest first with OFFSET
// n-1.
func (x Exec[D]) NthNewestUserVersion(ctx context.Context, q driver.ReadQuerier, tenant, stream string, from, n int64) (int64, bool, error) {
	var v int64
	err := q.QueryRowContext(ctx, x.bind(`SELECT version FROM events WHERE tenant = ? AND stream_id = ? AND version >= ? AND `+x.dialect().UserEvent()+`
				ORDER BY version DESC LIMIT 1 OFFSET ?`), tenant, stream, from, n-1).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, nil
	}
	return v, err == nil, err
}
