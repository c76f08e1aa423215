package sqlshared

import (
	"context"
	"database/sql"
	"errors"

	"github.com/eventlite/eventlite/store/internal/driver"
)

// RelayHasRun reads the relay's lease and published counter.
func (x Exec[D]) RelayHasRun(ctx context.Context, q driver.ReadQuerier) (bool, error) {
	var ran bool
	err := q.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM leases WHERE resource = 'relay')
		OR COALESCE((SELECT SUM(value) FROM outbox_counters WHERE name = 'published'), 0) > 0`).Scan(&ran)
	return ran, err
}

// EachPendingOutbox reads the pending events without a dead letter.
func (x Exec[D]) EachPendingOutbox(ctx context.Context, q driver.ReadQuerier, before int64, fn func(tenant, eventID string, recordedAt int64) error) error {
	rows, err := q.QueryContext(ctx, x.bind(x.dialect().Outbox().PendingCTE+` SELECT e.tenant, e.event_id, e.recorded_at FROM pending p JOIN events e ON e.position = p.position
		LEFT JOIN outbox o ON o.position = p.position
		WHERE o.dead_at IS NULL AND e.recorded_at < ? ORDER BY p.position`), before)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var tenant, id string
		var at int64
		if err := rows.Scan(&tenant, &id, &at); err != nil {
			return err
		}
		if err := fn(tenant, id, at); err != nil {
			return err
		}
	}
	return rows.Err()
}

// RelayBacklog asks whether a pending event is not a dead letter.
func (x Exec[D]) RelayBacklog(ctx context.Context, q driver.ReadQuerier) (bool, error) {
	var waiting bool
	err := q.QueryRowContext(ctx, x.dialect().Outbox().PendingCTE+` SELECT EXISTS (SELECT 1 FROM pending p LEFT JOIN outbox o ON o.position = p.position WHERE o.dead_at IS NULL)`).Scan(&waiting)
	return waiting, err
}

// ProjectionBacklog compares the checkpoint with the newest event.
func (x Exec[D]) ProjectionBacklog(ctx context.Context, q driver.ReadQuerier, name string) (bool, error) {
	var behind bool
	err := q.QueryRowContext(ctx, x.bind(`SELECT COALESCE((SELECT position FROM checkpoints WHERE name = ?), 0) < (SELECT COALESCE(MAX(position), 0) FROM events)`),
		name).Scan(&behind)
	return behind, err
}

// FirstRecordedAfter reads recorded_at of the next event.
func (x Exec[D]) FirstRecordedAfter(ctx context.Context, q driver.ReadQuerier, pos int64) (int64, bool, error) {
	var first int64
	err := q.QueryRowContext(ctx, x.bind(`SELECT recorded_at FROM events WHERE position > ? ORDER BY position LIMIT 1`), pos).Scan(&first)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, nil
	}
	return first, err == nil, err
}

// Tenants skip-scans the streams' primary key: one step per tenant.
func (x Exec[D]) Tenants(ctx context.Context, q driver.ReadQuerier) ([]string, error) {
	rows, err := q.QueryContext(ctx, `WITH RECURSIVE t (tenant) AS (
		SELECT MIN(tenant) FROM streams
		UNION ALL
		SELECT (SELECT MIN(s.tenant) FROM streams s WHERE s.tenant > t.tenant) FROM t WHERE t.tenant IS NOT NULL)
		SELECT tenant FROM t WHERE tenant IS NOT NULL`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []string{}
	for rows.Next() {
		var t string
		if err := rows.Scan(&t); err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return out, nil
}
