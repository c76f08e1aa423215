package sqlitedriver

import (
	"context"

	"github.com/eventlite/eventlite/store/internal/driver"
)

// EachVersionGap groups the events by stream.
func (x Exec) EachVersionGap(ctx context.Context, q driver.ReadQuerier, fn func(tenant, stream string) error) error {
	gaps, err := x.TableExists(ctx, q, "version_gaps")
	if err != nil {
		return err
	}
	query := eachVersionGap
	if gaps {
		// A restore's recorded gaps are no damage.
		query = `SELECT v.tenant, v.stream_id FROM (` + StreamVersionSpans + `) v WHERE ` + StreamVersionGap + `
		UNION SELECT s.tenant, s.stream_id FROM streams s
		WHERE NOT EXISTS (SELECT 1 FROM events e WHERE e.tenant = s.tenant AND e.stream_id = s.stream_id)`
	}
	rows, err := q.QueryContext(ctx, query)
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

// eachVersionGap is EachVersionGap's query in a file without recorded
// version gaps.
const eachVersionGap = `SELECT e.tenant, e.stream_id FROM events e JOIN streams s ON s.tenant = e.tenant AND s.stream_id = e.stream_id
		GROUP BY e.tenant, e.stream_id
		HAVING MAX(e.version) - MIN(e.version) + 1 != count(*) OR (MIN(e.version) != 1 AND MIN(e.version) > MIN(MAX(s.first_version), MAX(e.version)))
		UNION SELECT s.tenant, s.stream_id FROM streams s
		WHERE NOT EXISTS (SELECT 1 FROM events e WHERE e.tenant = s.tenant AND e.stream_id = s.stream_id)`

// InventoryStats counts in one statement: a live stream's readable
// events are its versions from first_version to its newest, less the
// versions a restore took back (version_gaps) in that range, so the
// counts read one index entry per stream (its newest version and that
// event's position, read once into a materialized table) and a lookup of
// its gaps (none on most streams). A tenant's newest position is the
// highest of its streams' newest events; its events of the last minute
// are counted walking the log from the newest event recorded before the
// cutoff (found scanning back from the head over the last minute's
// events only). The statement differs for one tenant and for every
// tenant, so that neither reads every event of a tenant.
func (Exec) InventoryStats(ctx context.Context, q driver.ReadQuerier, tenant string, cutoff int64, generation bool) (driver.InventoryStats, error) {
	var st driver.InventoryStats
	query, args := inventoryStatsAll, []any{cutoff}
	if tenant != "" {
		query, args = inventoryStatsTenant, []any{cutoff, tenant}
	}
	dest := []any{&st.Events, &st.Streams, &st.LastPosition, &st.RecentEvents}
	if generation {
		query += `, ` + headAndGeneration
		dest = append(dest, &st.Head, &st.Generation)
	}
	err := q.QueryRowContext(ctx, query, args...).Scan(dest...)
	return st, err
}

// headAndGeneration are the head (the newest position: every later
// append's is higher, and a scavenge that removes the newest event moves
// the generation) and stats_generation's counter.
const headAndGeneration = `COALESCE((SELECT MAX(position) FROM events), 0), (SELECT generation FROM stats_generation)`

// InventoryDelta walks the log from after on (+tenant keeps the planner
// on the positions, off the (tenant, event_id) index): one statement.
func (Exec) InventoryDelta(ctx context.Context, q driver.ReadQuerier, tenant string, after, cutoff int64) (driver.InventoryDelta, error) {
	var d driver.InventoryDelta
	query, args := inventoryDeltaAll, []any{cutoff, after}
	if tenant != "" {
		query, args = inventoryDeltaTenant, []any{cutoff, after, tenant}
	}
	err := q.QueryRowContext(ctx, query, args...).Scan(&d.Events, &d.NewStreams, &d.LastPosition, &d.RecentEvents, &d.Head, &d.Generation)
	return d, err
}

// inventoryDeltaSQL is InventoryDelta's statement: the events after ?2
// (of the tenant ?3 when events says so), the last minute's (cutoff ?1).
func inventoryDeltaSQL(events string) string {
	return `SELECT d.n, d.s, d.last, (SELECT count(*) FROM events WHERE position > ` + recentAfter + ` AND ` + events + `), ` + headAndGeneration + `
		FROM (SELECT count(*) AS n, COALESCE(SUM(version = 1), 0) AS s, COALESCE(MAX(position), 0) AS last
			FROM events WHERE position > ?2 AND ` + events + `) d`
}

var (
	inventoryDeltaAll    = inventoryDeltaSQL("1")
	inventoryDeltaTenant = inventoryDeltaSQL("+tenant = ?3")
)

// recentAfter is the position of the newest event recorded before the
// cutoff ?1: the events above it are the last minute's.
const recentAfter = `COALESCE((SELECT position FROM events WHERE recorded_at < ?1 ORDER BY position DESC LIMIT 1), 0)`

// inventoryStatsSQL is InventoryStats' statement; streams selects the
// streams (alias s) of the tenant ?2, or all; last and recent are the
// newest position and the count of the last minute's events.
func inventoryStatsSQL(streams, last, recent string) string {
	return `WITH sa AS MATERIALIZED (SELECT s.tenant, s.stream_id, s.first_version, s.deleted,
			(SELECT MAX(version) FROM events e WHERE e.tenant = s.tenant AND e.stream_id = s.stream_id) AS v
			FROM streams s WHERE ` + streams + `),
		sv AS (SELECT * FROM sa WHERE deleted = 0)
		SELECT
		(SELECT COALESCE(SUM(sv.v - sv.first_version + 1 - COALESCE((SELECT SUM(MIN(g.to_version, sv.v) - MAX(g.from_version, sv.first_version) + 1) FROM version_gaps g
			WHERE g.tenant = sv.tenant AND g.stream_id = sv.stream_id AND g.from_version <= sv.v AND g.to_version >= sv.first_version), 0)), 0) FROM sv),
		(SELECT count(*) FROM sv), ` + last + `, ` + recent
}

var (
	inventoryStatsAll = inventoryStatsSQL("1",
		`COALESCE((SELECT MAX(position) FROM events), 0)`,
		`(SELECT count(*) FROM events WHERE position > `+recentAfter+`)`)
	// One tenant: its newest position through its streams' newest events
	// (the (tenant, stream_id, version) index holds the position), and
	// the last minute's events walked in position order (+tenant keeps
	// the planner off the (tenant, event_id) index, which would count
	// every event of the tenant).
	inventoryStatsTenant = inventoryStatsSQL("s.tenant = ?2",
		`COALESCE((SELECT MAX((SELECT position FROM events e WHERE e.tenant = sa.tenant AND e.stream_id = sa.stream_id AND e.version = sa.v)) FROM sa), 0)`,
		`(SELECT count(*) FROM events WHERE position > `+recentAfter+` AND +tenant = ?2)`)
)

// TypeCounts reads the tenant's events in position order (+tenant keeps
// the planner off the (tenant, event_id) index, which would look every
// row up by its position): one pass over the log.
func (Exec) TypeCounts(ctx context.Context, q driver.ReadQuerier, tenant string) (map[string]int64, error) {
	rows, err := q.QueryContext(ctx, `SELECT type, count(*) FROM events WHERE +tenant = ? GROUP BY type`, tenant)
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
