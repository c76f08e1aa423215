package pgdriver

import (
	"context"

	"github.com/eventlite/eventlite/store/internal/driver"
	"github.com/eventlite/eventlite/store/internal/driver/sqlshared"
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
var invariantChecks = []sqlshared.Check{
	{Inv: driver.VersionsGapFree, Query: `SELECT count(*) FROM (` + streamVersionSpans + `) v WHERE ` + streamVersionGap},
	{Inv: driver.StreamsHaveEvents, Query: sqlshared.CheckStreamsHaveEvents},
	{Inv: driver.EventsHaveStream, Query: sqlshared.CheckEventsHaveStream},
	{Inv: driver.OutboxRowsHaveEvent, Query: sqlshared.CheckOutboxRowsHaveEvent},
	{Inv: driver.PositionsFollowVersions, Query: sqlshared.CheckPositionsFollowVersions},
	{Inv: driver.PositionsGapFree, Query: `SELECT count(*) FROM events a
		WHERE a.position > (SELECT min(position) FROM events)
		AND NOT EXISTS (SELECT 1 FROM events b WHERE b.position = a.position - 1)
		AND NOT EXISTS (SELECT 1 FROM position_holes h WHERE h.detected_by = 'restore' AND h.to_position = a.position - 1)
		AND NOT EXISTS (SELECT 1 FROM removed_ranges r WHERE r.to_position = a.position - 1)`},
	{Inv: driver.TombstonesLast, Query: sqlshared.CheckTombstonesLast},
	{Inv: driver.FirstVersionsInRange, Query: sqlshared.CheckFirstVersionsInRange},
	{Inv: driver.RemovedIDsGone, Query: sqlshared.CheckRemovedIDsGone},
	{Inv: driver.RemovedPositionsGone, Query: sqlshared.CheckRemovedPositionsGone},
	{Inv: driver.WatermarkOneRow, Query: sqlshared.CheckWatermarkOneRow},
	{Inv: driver.SettledBelowWatermark, Query: sqlshared.CheckSettledBelowWatermark},
	{Inv: driver.PendingBelowCursorBlocked, Query: sqlshared.CheckPendingBelowCursorBlocked},
	{Inv: driver.WatermarkNotAhead, Query: Exec{}.CheckWatermarkNotAhead()},
	{Inv: driver.FloorOneRow, Query: `SELECT abs(count(*) - 1) FROM log_head`},
	{Inv: driver.RemovedBelowSequence, Query: `SELECT count(*) FROM removed_ranges r
		WHERE r.to_position > GREATEST(COALESCE((SELECT max(position) FROM events), 0), (SELECT position FROM log_head))`},
}

// CheckLog runs one count per invariant.
func (x Exec) CheckLog(ctx context.Context, q driver.ReadQuerier, tombstoneType string) ([]driver.Violations, error) {
	return x.RunChecks(ctx, q, invariantChecks, tombstoneType)
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
