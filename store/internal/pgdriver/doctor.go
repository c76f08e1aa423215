package pgdriver

import (
	"context"

	"github.com/eventlite/eventlite/store/internal/driver"
)

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
