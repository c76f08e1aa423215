package pgdriver

import (
	"context"
	"database/sql"
	"errors"

	"github.com/eventlite/eventlite/store/internal/driver"
)

// RelayHasRun reads the relay's lease and published counter.
func (Exec) RelayHasRun(ctx context.Context, q driver.ReadQuerier) (bool, error) {
	var ran bool
	err := q.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM leases WHERE resource = 'relay')
		OR COALESCE((SELECT SUM(value) FROM outbox_counters WHERE name = 'published'), 0) > 0`).Scan(&ran)
	return ran, err
}

// EachPendingOutbox reads the pending events without a dead letter.
func (Exec) EachPendingOutbox(ctx context.Context, q driver.ReadQuerier, before int64, fn func(tenant, eventID string, recordedAt int64) error) error {
	rows, err := q.QueryContext(ctx, PendingCTE+` SELECT e.tenant, e.event_id, e.recorded_at FROM pending p JOIN events e ON e.position = p.position
		LEFT JOIN outbox o ON o.position = p.position
		WHERE o.dead_at IS NULL AND e.recorded_at < $1 ORDER BY p.position`, before)
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
func (Exec) RelayBacklog(ctx context.Context, q driver.ReadQuerier) (bool, error) {
	var waiting bool
	err := q.QueryRowContext(ctx, PendingCTE+` SELECT EXISTS (SELECT 1 FROM pending p LEFT JOIN outbox o ON o.position = p.position WHERE o.dead_at IS NULL)`).Scan(&waiting)
	return waiting, err
}

// ProjectionBacklog compares the checkpoint with the newest event.
func (Exec) ProjectionBacklog(ctx context.Context, q driver.ReadQuerier, name string) (bool, error) {
	var behind bool
	err := q.QueryRowContext(ctx, `SELECT COALESCE((SELECT position FROM checkpoints WHERE name = $1), 0) < (SELECT COALESCE(MAX(position), 0) FROM events)`,
		name).Scan(&behind)
	return behind, err
}

// FirstRecordedAfter reads recorded_at of the next event.
func (Exec) FirstRecordedAfter(ctx context.Context, q driver.ReadQuerier, pos int64) (int64, bool, error) {
	var first int64
	err := q.QueryRowContext(ctx, `SELECT recorded_at FROM events WHERE position > $1 ORDER BY position LIMIT 1`, pos).Scan(&first)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, nil
	}
	return first, err == nil, err
}

// EachVersionGap groups the events by stream; the streams come in byte
// order, as SQLite's UNION gives them.
func (Exec) EachVersionGap(ctx context.Context, q driver.ReadQuerier, fn func(tenant, stream string) error) error {
	rows, err := q.QueryContext(ctx, `SELECT v.tenant, v.stream_id FROM (`+streamVersionSpans+`) v WHERE `+streamVersionGap+`
		UNION SELECT s.tenant, s.stream_id FROM streams s
		WHERE NOT EXISTS (SELECT 1 FROM events e WHERE e.tenant = s.tenant AND e.stream_id = s.stream_id)
		ORDER BY 1, 2`)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var tenant, stream string
		if err := rows.Scan(&tenant, &stream); err != nil {
			return err
		}
		if err := fn(tenant, stream); err != nil {
			return err
		}
	}
	return rows.Err()
}

// InventoryStats counts in one statement: a live stream's readable
// events are its versions from first_version to its newest, less the
// versions a restore took back (version_gaps) in that range, so the
// counts read one index entry per stream and a lookup of its gaps (none
// on most streams). A tenant's newest position and its events of the
// last minute are read from the (tenant, position) index, after the
// newest event recorded before the cutoff, found scanning back from the
// head over the last minute's events only. The statement differs for one
// tenant and for every tenant, so that the planner sees which index the
// tenant selects.
func (Exec) InventoryStats(ctx context.Context, q driver.ReadQuerier, tenant string, cutoff int64) (driver.InventoryStats, error) {
	var st driver.InventoryStats
	query, args := inventoryStatsAll, []any{cutoff}
	if tenant != "" {
		query, args = inventoryStatsTenant, []any{cutoff, tenant}
	}
	err := q.QueryRowContext(ctx, query, args...).Scan(&st.Events, &st.Streams, &st.LastPosition, &st.RecentEvents)
	return st, err
}

// inventoryStatsSQL is InventoryStats' statement; the predicates select
// the streams (alias s) and the events (no alias) of the tenant $2, or all.
func inventoryStatsSQL(streams, events string) string {
	return `WITH sv AS MATERIALIZED (SELECT s.tenant, s.stream_id, s.first_version,
			(SELECT max(version) FROM events e WHERE e.tenant = s.tenant AND e.stream_id = s.stream_id) AS v
			FROM streams s WHERE ` + streams + ` AND s.deleted = 0)
		SELECT
		(SELECT COALESCE(sum(sv.v - sv.first_version + 1 - COALESCE((SELECT sum(LEAST(g.to_version, sv.v) - GREATEST(g.from_version, sv.first_version) + 1) FROM version_gaps g
			WHERE g.tenant = sv.tenant AND g.stream_id = sv.stream_id AND g.from_version <= sv.v AND g.to_version >= sv.first_version), 0)), 0)::bigint FROM sv),
		(SELECT count(*) FROM sv),
		COALESCE((SELECT position FROM events WHERE ` + events + ` ORDER BY position DESC LIMIT 1), 0),
		(SELECT count(*) FROM events WHERE ` + events + ` AND position > COALESCE(
			(SELECT position FROM events WHERE recorded_at < $1 ORDER BY position DESC LIMIT 1), 0))`
}

var (
	inventoryStatsAll    = inventoryStatsSQL("TRUE", "TRUE")
	inventoryStatsTenant = inventoryStatsSQL("s.tenant = $2", "tenant = $2")
)

// TypeCounts counts the tenant's events by type: one pass over them.
func (Exec) TypeCounts(ctx context.Context, q driver.ReadQuerier, tenant string) (map[string]int64, error) {
	rows, err := q.QueryContext(ctx, `SELECT type, count(*) FROM events WHERE tenant = $1 GROUP BY type`, tenant)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var t string
		var n int64
		if err := rows.Scan(&t, &n); err != nil {
			return nil, err
		}
		out[t] = n
	}
	return out, rows.Err()
}

// Tenants skip-scans the streams' primary key: one step per tenant.
func (Exec) Tenants(ctx context.Context, q driver.ReadQuerier) ([]string, error) {
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
