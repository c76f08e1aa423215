package sqlitedriver

import (
	"context"
	"slices"
	"strings"

	"github.com/eventlite/eventlite/store/internal/driver"
	"github.com/eventlite/eventlite/store/internal/driver/sqlshared"
)

// CheckLog picks the checks by the tables the file's schema has, then
// runs one count per check.
func (x Exec) CheckLog(ctx context.Context, q driver.ReadQuerier, tombstoneType string) ([]driver.Violations, error) {
	checks := []sqlshared.Check{
		{Inv: driver.VersionsGapFree, Query: `SELECT COUNT(*) FROM (SELECT tenant, stream_id FROM events
			GROUP BY tenant, stream_id HAVING MIN(version) != 1 OR MAX(version) != COUNT(*))`},
		{Inv: driver.StreamsHaveEvents, Query: sqlshared.CheckStreamsHaveEvents},
		{Inv: driver.EventsHaveStream, Query: sqlshared.CheckEventsHaveStream},
		{Inv: driver.EventsHaveOutboxRow, Query: invariantOutboxRows},
		{Inv: driver.OutboxRowsHaveEvent, Query: sqlshared.CheckOutboxRowsHaveEvent},
		{Inv: driver.PositionsFollowVersions, Query: sqlshared.CheckPositionsFollowVersions},
		{Inv: driver.PositionsGapFree, Query: `SELECT COUNT(*) FROM events a
			WHERE a.position > (SELECT MIN(position) FROM events)
			AND NOT EXISTS (SELECT 1 FROM events b WHERE b.position = a.position - 1)` + invariantRestoreGap},
	}
	// From schema 12 on a scavenge removes events: a stream's versions run
	// without gap from the lowest retained one, which is at most where its
	// reads start, and removed positions are recorded, not holes.
	removedTable, err := x.TableExists(ctx, q, "removed_ranges")
	if err != nil {
		return nil, err
	}
	gapsTable, err := x.TableExists(ctx, q, "version_gaps")
	if err != nil {
		return nil, err
	}
	switch {
	case gapsTable:
		checks[0].Query = invariantRestoredVersions
	case removedTable:
		checks[0].Query = invariantScavengedVersions
	}
	if removedTable {
		checks[len(checks)-1].Query += invariantRemovedRange
		checks = append(checks, invariantLifecycleChecks...)
	}
	// From schema 15 on an append writes no outbox row: the watermark
	// says what is settled.
	watermark, err := x.TableExists(ctx, q, "outbox_watermark")
	if err != nil {
		return nil, err
	}
	if watermark {
		checks = slices.DeleteFunc(checks, func(c sqlshared.Check) bool { return c.Inv == driver.EventsHaveOutboxRow })
		checks = append(checks, invariantWatermarkChecks...)
	}
	// A file older than the position_holes table has no restore gaps.
	holesTable, err := x.TableExists(ctx, q, "position_holes")
	if err != nil {
		return nil, err
	}
	if !holesTable {
		checks[len(checks)-1].Query = strings.TrimSuffix(checks[len(checks)-1].Query, invariantRestoreGap)
	}
	// From schema 14 on the writer hands out positions above the floor.
	floorTable, err := x.TableExists(ctx, q, "position_floor")
	if err != nil {
		return nil, err
	}
	if floorTable {
		checks = append(checks, invariantFloorChecks...)
	}
	return x.RunChecks(ctx, q, checks, tombstoneType)
}

// IntegrityCheck runs PRAGMA integrity_check, which answers one row "ok"
// for a sound file.
func (Exec) IntegrityCheck(ctx context.Context, q driver.ReadQuerier) ([]string, error) {
	rows, err := q.QueryContext(ctx, `PRAGMA integrity_check`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var problems []string
	for rows.Next() {
		var msg string
		if err := rows.Scan(&msg); err != nil {
			return nil, err
		}
		if msg != "ok" {
			problems = append(problems, msg)
		}
	}
	return problems, rows.Err()
}

// LogFacts reads the sequence from the position floor or, in a file
// older than schema 14 (which has none), from SQLite's AUTOINCREMENT
// sequence, which the migration to 14 turns into the floor.
func (x Exec) LogFacts(ctx context.Context, q driver.ReadQuerier) (driver.LogFacts, error) {
	var f driver.LogFacts
	floor, err := x.TableExists(ctx, q, "position_floor")
	if err != nil {
		return f, err
	}
	seq := `SELECT COALESCE(MAX(seq), 0) FROM sqlite_sequence WHERE name = 'events'`
	if floor {
		seq = `SELECT COALESCE(MAX(position), 0) FROM position_floor`
	}
	err = q.QueryRowContext(ctx, `SELECT (SELECT count(*) FROM events), (SELECT count(*) FROM streams),
		(SELECT COALESCE(MAX(position), 0) FROM events), (`+seq+`)`).Scan(&f.Events, &f.Streams, &f.Head, &f.Sequence)
	return f, err
}

// invariantRestoreGap excludes from the hole count the events right above a
// hole that a restore recorded (detected_by 'restore', the store's
// HoleRestore).
const invariantRestoreGap = `
			AND NOT EXISTS (SELECT 1 FROM position_holes h WHERE h.detected_by = 'restore' AND h.to_position = a.position - 1)`

// invariantOutboxRows counts the events without an outbox row: a problem
// before schema 15, when every append wrote one.
const invariantOutboxRows = `SELECT COUNT(*) FROM events e
			WHERE NOT EXISTS (SELECT 1 FROM outbox o WHERE o.position = e.position)`

// invariantWatermarkChecks check the outbox's watermark (migration 0015): W
// (settled) and the cursor C (scanned).
var invariantWatermarkChecks = []sqlshared.Check{
	{Inv: driver.WatermarkOneRow, Query: sqlshared.CheckWatermarkOneRow},
	{Inv: driver.SettledBelowWatermark, Query: sqlshared.CheckSettledBelowWatermark},
	{Inv: driver.PendingBelowCursorBlocked, Query: sqlshared.CheckPendingBelowCursorBlocked},
	{Inv: driver.WatermarkNotAhead, Query: Exec{}.CheckWatermarkNotAhead()},
}

// invariantScavengedVersions counts the streams whose versions are not
// first..n without gap, first being at most where their reads start
// (a scavenge removes versions below it, never the newest).
const invariantScavengedVersions = `SELECT COUNT(*) FROM (SELECT e.tenant, e.stream_id FROM events e
	JOIN streams s ON s.tenant = e.tenant AND s.stream_id = e.stream_id
	GROUP BY e.tenant, e.stream_id
	HAVING MAX(e.version) - MIN(e.version) + 1 != COUNT(*) OR (MIN(e.version) != 1 AND MIN(e.version) > MIN(MAX(s.first_version), MAX(e.version))))`

// invariantRestoredVersions is invariantScavengedVersions that also
// accepts the versions a restore took back (version_gaps, migration
// 0018): they lie between the stream's lowest and newest event.
const invariantRestoredVersions = `SELECT COUNT(*) FROM (` + StreamVersionSpans + `) v WHERE ` + StreamVersionGap

// StreamVersionSpans reads, per stream with events, its lowest and
// newest version, how many events it has and where its reads start;
// StreamVersionGap is the condition under which they are not
// first..newest without a gap but for a scavenge's removed versions
// (below where reads start) and a restore's recorded gaps.
const (
	StreamVersionSpans = `SELECT e.tenant, e.stream_id, MIN(e.version) AS lo, MAX(e.version) AS hi, COUNT(*) AS n, MAX(s.first_version) AS fv
	FROM events e JOIN streams s ON s.tenant = e.tenant AND s.stream_id = e.stream_id GROUP BY e.tenant, e.stream_id`
	StreamVersionGap = `v.hi - v.lo + 1 != v.n + (SELECT COALESCE(SUM(g.to_version - g.from_version + 1), 0) FROM version_gaps g
		WHERE g.tenant = v.tenant AND g.stream_id = v.stream_id AND g.from_version > v.lo AND g.to_version < v.hi)
	OR (v.lo != 1 AND v.lo > MIN(v.fv, v.hi) AND NOT EXISTS (SELECT 1 FROM version_gaps g
		WHERE g.tenant = v.tenant AND g.stream_id = v.stream_id AND g.from_version <= v.fv AND g.to_version = v.lo - 1))`
)

// invariantFloorChecks check the position floor (migration 0014): one row, and no
// removed position at or above the next position handed out, which would
// hand it out again.
var invariantFloorChecks = []sqlshared.Check{
	{Inv: driver.FloorOneRow, Query: `SELECT abs((SELECT COUNT(*) FROM position_floor) - 1)`},
	{Inv: driver.RemovedBelowSequence, Query: `SELECT COUNT(*) FROM removed_ranges r
		WHERE r.to_position > max(COALESCE((SELECT MAX(position) FROM events), 0), COALESCE((SELECT MAX(position) FROM position_floor), 0))`},
}

// invariantRemovedRange excludes from the hole count the events just after
// a range a scavenge removed.
const invariantRemovedRange = `
			AND NOT EXISTS (SELECT 1 FROM removed_ranges r WHERE r.to_position = a.position - 1)`

// invariantLifecycleChecks check the lifecycle columns (migration 0011) against
// the events present; the tombstone's type is the query's argument.
var invariantLifecycleChecks = []sqlshared.Check{
	{Inv: driver.TombstonesLast, Query: sqlshared.CheckTombstonesLast},
	{Inv: driver.FirstVersionsInRange, Query: sqlshared.CheckFirstVersionsInRange},
	{Inv: driver.RemovedIDsGone, Query: sqlshared.CheckRemovedIDsGone},
	{Inv: driver.RemovedPositionsGone, Query: sqlshared.CheckRemovedPositionsGone},
}
