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
	rows, err := q.QueryContext(ctx, x.bind(x.dialect().PendingCTE()+` SELECT e.tenant, e.event_id, e.recorded_at FROM pending p JOIN events e ON e.position = p.position
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
	err := q.QueryRowContext(ctx, x.dialect().PendingCTE()+` SELECT EXISTS (SELECT 1 FROM pending p LEFT JOIN outbox o ON o.position = p.position WHERE o.dead_at IS NULL)`).Scan(&waiting)
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

// InventoryStats counts in one statement: a live stream's readable
// events are its versions from first_version to its newest, less the
// versions a restore took back (version_gaps) in that range, so the
// counts read one index entry per stream and a lookup of its gaps (none
// on most streams); the newest position is the first match scanning back
// from the head.
func (x Exec[D]) InventoryStats(ctx context.Context, q driver.ReadQuerier, tenant string, cutoff int64) (driver.InventoryStats, error) {
	d := x.dialect()
	var st driver.InventoryStats
	err := q.QueryRowContext(ctx, x.bind(`SELECT
		(SELECT `+d.Int64(`COALESCE(sum(s.v - s.first_version + 1 - COALESCE((SELECT sum(`+d.Least()+`(g.to_version, s.v) - `+d.Greatest()+`(g.from_version, s.first_version) + 1) FROM version_gaps g
				WHERE g.tenant = s.tenant AND g.stream_id = s.stream_id AND g.from_version <= s.v AND g.to_version >= s.first_version), 0)), 0)`)+`
			FROM (SELECT s.tenant, s.stream_id, s.first_version, (SELECT max(version) FROM events e WHERE e.tenant = s.tenant AND e.stream_id = s.stream_id) AS v
				FROM streams s WHERE (? = '' OR s.tenant = ?) AND s.deleted = 0) s),
		(SELECT count(*) FROM streams WHERE (? = '' OR tenant = ?) AND deleted = 0),
		COALESCE((SELECT position FROM events WHERE ? = '' OR tenant = ? ORDER BY position DESC LIMIT 1), 0),
		(SELECT count(*) FROM events WHERE (? = '' OR tenant = ?) AND position > COALESCE(
			(SELECT position FROM events WHERE recorded_at < ? ORDER BY position DESC LIMIT 1), 0))`),
		tenant, tenant, tenant, tenant, tenant, tenant, tenant, tenant, cutoff).Scan(&st.Events, &st.Streams, &st.LastPosition, &st.RecentEvents)
	return st, err
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
