package pgdriver

import (
	"context"

	"github.com/eventlite/eventlite/store/internal/driver"
)

// invariantCheck is one invariant's count query.
type invariantCheck struct {
	inv   driver.Invariant
	query string
}

// The outbox conditions the watermark checks share, as the SQLite
// driver's outbox states them: an event whose row is missing or neither
// published nor discarded is unsettled; a row f that failed and is still
// pending holds its stream.
const (
	invUnsettled  = `(o.position IS NULL OR (o.published_at IS NULL AND o.discarded_at IS NULL))`
	invFailingRow = `f.published_at IS NULL AND f.discarded_at IS NULL AND f.attempts > 0`
)

// streamVersionSpans reads, per stream with events, its lowest and
// newest version, how many events it has and where its reads start;
// streamVersionGap is the condition under which they are not
// first..newest without a gap but for a scavenge's removed versions
// (below where reads start) and the gaps a restore recorded on SQLite
// (version_gaps, kept by a copy).
const (
	streamVersionSpans = `SELECT e.tenant, e.stream_id, min(e.version) AS lo, max(e.version) AS hi, count(*) AS n, max(s.first_version) AS fv
	FROM events e JOIN streams s ON s.tenant = e.tenant AND s.stream_id = e.stream_id GROUP BY e.tenant, e.stream_id`
	streamVersionGap = `v.hi - v.lo + 1 <> v.n + (SELECT COALESCE(sum(g.to_version - g.from_version + 1), 0) FROM version_gaps g
		WHERE g.tenant = v.tenant AND g.stream_id = v.stream_id AND g.from_version > v.lo AND g.to_version < v.hi)
	OR (v.lo <> 1 AND v.lo > LEAST(v.fv, v.hi) AND NOT EXISTS (SELECT 1 FROM version_gaps g
		WHERE g.tenant = v.tenant AND g.stream_id = v.stream_id AND g.from_version <= v.fv AND g.to_version = v.lo - 1))`
)

// invariantChecks are the log's invariants. A PostgreSQL schema is always
// the newest (it has one version so far), so every check applies. The
// position floor is log_head.position: one row by its primary key and
// CHECK, and the sequence the next append continues from.
var invariantChecks = []invariantCheck{
	{driver.VersionsGapFree, `SELECT count(*) FROM (` + streamVersionSpans + `) v WHERE ` + streamVersionGap},
	{driver.StreamsHaveEvents, `SELECT count(*) FROM streams s
		WHERE NOT EXISTS (SELECT 1 FROM events e WHERE e.tenant = s.tenant AND e.stream_id = s.stream_id)`},
	{driver.EventsHaveStream, `SELECT count(*) FROM events e
		WHERE NOT EXISTS (SELECT 1 FROM streams s WHERE s.tenant = e.tenant AND s.stream_id = e.stream_id)`},
	{driver.OutboxRowsHaveEvent, `SELECT count(*) FROM outbox o
		WHERE NOT EXISTS (SELECT 1 FROM events e WHERE e.position = o.position)`},
	{driver.PositionsFollowVersions, `SELECT count(*) FROM events a
		JOIN events b ON b.tenant = a.tenant AND b.stream_id = a.stream_id AND b.version = a.version + 1
		WHERE b.position <= a.position`},
	{driver.PositionsGapFree, `SELECT count(*) FROM events a
		WHERE a.position > (SELECT min(position) FROM events)
		AND NOT EXISTS (SELECT 1 FROM events b WHERE b.position = a.position - 1)
		AND NOT EXISTS (SELECT 1 FROM position_holes h WHERE h.detected_by = 'restore' AND h.to_position = a.position - 1)
		AND NOT EXISTS (SELECT 1 FROM removed_ranges r WHERE r.to_position = a.position - 1)`},
	{driver.TombstonesLast, `SELECT count(*) FROM streams s
		WHERE s.deleted <> 0 AND NOT EXISTS (SELECT 1 FROM events e WHERE e.tenant = s.tenant AND e.stream_id = s.stream_id
			AND e.version = (SELECT max(version) FROM events n WHERE n.tenant = s.tenant AND n.stream_id = s.stream_id
				AND n.type <> '` + driver.StreamRestoredType + `') AND e.type = $1)`},
	{driver.FirstVersionsInRange, `SELECT count(*) FROM streams s
		WHERE s.first_version < 1
			OR s.first_version > COALESCE((SELECT max(version) FROM events e WHERE e.tenant = s.tenant AND e.stream_id = s.stream_id), 0) + 1`},
	{driver.RemovedIDsGone, `SELECT count(*) FROM removed_event_ids r
		WHERE EXISTS (SELECT 1 FROM events e WHERE e.tenant = r.tenant AND e.event_id = r.event_id)`},
	{driver.RemovedPositionsGone, `SELECT count(*) FROM removed_ranges r
		WHERE EXISTS (SELECT 1 FROM events e WHERE e.position BETWEEN r.from_position AND r.to_position)`},
	{driver.WatermarkOneRow, `SELECT abs(count(*) - 1) FROM outbox_watermark`},
	{driver.SettledBelowWatermark, `SELECT count(*) FROM events e
		WHERE e.position <= (SELECT settled FROM outbox_watermark)
		AND NOT EXISTS (SELECT 1 FROM outbox o WHERE o.position = e.position AND (o.published_at IS NOT NULL OR o.discarded_at IS NOT NULL))`},
	{driver.PendingBelowCursorBlocked, `SELECT count(*) FROM events e
		LEFT JOIN outbox o ON o.position = e.position
		WHERE e.position > (SELECT settled FROM outbox_watermark) AND e.position <= (SELECT scanned FROM outbox_watermark) AND ` + invUnsettled + `
		AND NOT EXISTS (SELECT 1 FROM outbox f JOIN events x ON x.position = f.position
			WHERE ` + invFailingRow + ` AND x.tenant = e.tenant AND x.stream_id = e.stream_id AND f.position <= e.position)`},
	{driver.WatermarkNotAhead, `SELECT count(*) FROM outbox_watermark
		WHERE GREATEST(settled, scanned) > GREATEST(COALESCE((SELECT max(position) FROM events), 0),
			COALESCE((SELECT max(to_position) FROM removed_ranges), 0))`},
	{driver.FloorOneRow, `SELECT abs(count(*) - 1) FROM log_head`},
	{driver.RemovedBelowSequence, `SELECT count(*) FROM removed_ranges r
		WHERE r.to_position > GREATEST(COALESCE((SELECT max(position) FROM events), 0), (SELECT position FROM log_head))`},
}

// CheckLog runs one count per invariant.
func (Exec) CheckLog(ctx context.Context, q driver.ReadQuerier, tombstoneType string) ([]driver.Violations, error) {
	out := make([]driver.Violations, 0, len(invariantChecks))
	for _, c := range invariantChecks {
		var args []any
		if c.inv == driver.TombstonesLast {
			args = []any{tombstoneType}
		}
		var n int64
		if err := q.QueryRowContext(ctx, c.query, args...).Scan(&n); err != nil {
			return nil, err
		}
		out = append(out, driver.Violations{Invariant: c.inv, Count: n})
	}
	return out, nil
}

// IntegrityCheck finds nothing to check: PostgreSQL checks its pages
// itself (and with data checksums, on every read); there is no
// engine-level check a client runs in a statement.
func (Exec) IntegrityCheck(context.Context, driver.ReadQuerier) ([]string, error) { return nil, nil }

// LogFacts reads the counts, the newest position and the head row in one
// statement.
func (Exec) LogFacts(ctx context.Context, q driver.ReadQuerier) (driver.LogFacts, error) {
	var f driver.LogFacts
	err := q.QueryRowContext(ctx, `SELECT (SELECT count(*) FROM events), (SELECT count(*) FROM streams),
		(SELECT COALESCE(max(position), 0) FROM events), (SELECT position FROM log_head)`).Scan(&f.Events, &f.Streams, &f.Head, &f.Sequence)
	return f, err
}
