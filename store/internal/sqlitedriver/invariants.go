package sqlitedriver

import (
	"context"
	"slices"
	"strings"

	"github.com/eventlite/eventlite/store/internal/driver"
)

// invariantCheck is one invariant's count query.
type invariantCheck struct {
	inv   driver.Invariant
	query string
}

// CheckLog picks the checks by the tables the file's schema has, then
// runs one count per check.
func (x Exec) CheckLog(ctx context.Context, q driver.ReadQuerier, tombstoneType string) ([]driver.Violations, error) {
	checks := []invariantCheck{
		{driver.VersionsGapFree, `SELECT COUNT(*) FROM (SELECT tenant, stream_id FROM events
			GROUP BY tenant, stream_id HAVING MIN(version) != 1 OR MAX(version) != COUNT(*))`},
		{driver.StreamsHaveEvents, `SELECT COUNT(*) FROM streams s
			WHERE NOT EXISTS (SELECT 1 FROM events e WHERE e.tenant = s.tenant AND e.stream_id = s.stream_id)`},
		{driver.EventsHaveStream, `SELECT COUNT(*) FROM events e
			WHERE NOT EXISTS (SELECT 1 FROM streams s WHERE s.tenant = e.tenant AND s.stream_id = e.stream_id)`},
		{driver.EventsHaveOutboxRow, invariantOutboxRows},
		{driver.OutboxRowsHaveEvent, `SELECT COUNT(*) FROM outbox o
			WHERE NOT EXISTS (SELECT 1 FROM events e WHERE e.position = o.position)`},
		{driver.PositionsFollowVersions, `SELECT COUNT(*) FROM events a
			JOIN events b ON b.tenant = a.tenant AND b.stream_id = a.stream_id AND b.version = a.version + 1
			WHERE b.position <= a.position`},
		{driver.PositionsGapFree, `SELECT COUNT(*) FROM events a
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
		checks[0].query = invariantRestoredVersions
	case removedTable:
		checks[0].query = invariantScavengedVersions
	}
	if removedTable {
		checks[len(checks)-1].query += invariantRemovedRange
		checks = append(checks, invariantLifecycleChecks...)
	}
	// From schema 15 on an append writes no outbox row: the watermark
	// says what is settled.
	watermark, err := x.TableExists(ctx, q, "outbox_watermark")
	if err != nil {
		return nil, err
	}
	if watermark {
		checks = slices.DeleteFunc(checks, func(c invariantCheck) bool { return c.inv == driver.EventsHaveOutboxRow })
		checks = append(checks, invariantWatermarkChecks...)
	}
	// A file older than the position_holes table has no restore gaps.
	holesTable, err := x.TableExists(ctx, q, "position_holes")
	if err != nil {
		return nil, err
	}
	if !holesTable {
		checks[len(checks)-1].query = strings.TrimSuffix(checks[len(checks)-1].query, invariantRestoreGap)
	}
	// From schema 14 on the writer hands out positions above the floor.
	floorTable, err := x.TableExists(ctx, q, "position_floor")
	if err != nil {
		return nil, err
	}
	if floorTable {
		checks = append(checks, invariantFloorChecks...)
	}
	out := make([]driver.Violations, 0, len(checks))
	for _, c := range checks {
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
var invariantWatermarkChecks = []invariantCheck{
	{driver.WatermarkOneRow, `SELECT abs(COUNT(*) - 1) FROM outbox_watermark`},
	{driver.SettledBelowWatermark, `SELECT COUNT(*) FROM events e
		WHERE e.position <= (SELECT settled FROM outbox_watermark)
		AND NOT EXISTS (SELECT 1 FROM outbox o WHERE o.position = e.position AND (o.published_at IS NOT NULL OR o.discarded_at IS NOT NULL))`},
	{driver.PendingBelowCursorBlocked, `SELECT COUNT(*) FROM events e
		LEFT JOIN outbox o ON o.position = e.position
		WHERE e.position > (SELECT settled FROM outbox_watermark) AND e.position <= (SELECT scanned FROM outbox_watermark) AND ` + Unsettled + `
		AND NOT EXISTS (SELECT 1 FROM outbox f JOIN events x ON x.position = f.position
			WHERE ` + FailingRow + ` AND x.tenant = e.tenant AND x.stream_id = e.stream_id AND f.position <= e.position)`},
	{driver.WatermarkNotAhead, `SELECT COUNT(*) FROM outbox_watermark
		WHERE max(settled, scanned) > max(COALESCE((SELECT MAX(position) FROM events), 0),
			COALESCE((SELECT MAX(to_position) FROM removed_ranges), 0))`},
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
var invariantFloorChecks = []invariantCheck{
	{driver.FloorOneRow, `SELECT abs((SELECT COUNT(*) FROM position_floor) - 1)`},
	{driver.RemovedBelowSequence, `SELECT COUNT(*) FROM removed_ranges r
		WHERE r.to_position > max(COALESCE((SELECT MAX(position) FROM events), 0), COALESCE((SELECT MAX(position) FROM position_floor), 0))`},
}

// invariantRemovedRange excludes from the hole count the events just after
// a range a scavenge removed.
const invariantRemovedRange = `
			AND NOT EXISTS (SELECT 1 FROM removed_ranges r WHERE r.to_position = a.position - 1)`

// invariantLifecycleChecks check the lifecycle columns (migration 0011) against
// the events present; the tombstone's type is the query's argument.
var invariantLifecycleChecks = []invariantCheck{
	{driver.TombstonesLast, `SELECT COUNT(*) FROM streams s
		WHERE s.deleted != 0 AND NOT EXISTS (SELECT 1 FROM events e WHERE e.tenant = s.tenant AND e.stream_id = s.stream_id
			AND e.version = (SELECT MAX(version) FROM events n WHERE n.tenant = s.tenant AND n.stream_id = s.stream_id
				AND n.type <> '` + driver.StreamRestoredType + `') AND e.type = ?)`},
	{driver.FirstVersionsInRange, `SELECT COUNT(*) FROM streams s
		WHERE s.first_version < 1
			OR s.first_version > COALESCE((SELECT MAX(version) FROM events e WHERE e.tenant = s.tenant AND e.stream_id = s.stream_id), 0) + 1`},
	{driver.RemovedIDsGone, `SELECT COUNT(*) FROM removed_event_ids r
		WHERE EXISTS (SELECT 1 FROM events e WHERE e.tenant = r.tenant AND e.event_id = r.event_id)`},
	{driver.RemovedPositionsGone, `SELECT COUNT(*) FROM removed_ranges r
		WHERE EXISTS (SELECT 1 FROM events e WHERE e.position BETWEEN r.from_position AND r.to_position)`},
}
