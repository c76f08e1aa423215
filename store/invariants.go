package store

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
)

// CheckInvariants scans the whole file and reports every broken invariant
// of the log in an *InvariantError: versions 1..n without gap per stream,
// a stream row for every stream with events and events for every stream
// row, the outbox's watermark (every event at or below it settled, none
// of the pending events between it and the relay's cursor outside a
// stream with a failed row, neither above the newest position) and every
// outbox row's event, positions increasing with versions inside a stream, no hole
// in the global positions (but for the positions a restore left unused:
// see Restore), no removed position that the next append would hand out
// again (the position floor), and SQLite's own integrity check. It reads
// everything: use it in tests and reconciliation, not on a hot path.
func (s *Store) CheckInvariants(ctx context.Context) error {
	problems, err := invariantProblems(ctx, s.rdb)
	if err != nil {
		return err
	}
	if len(problems) > 0 {
		return &InvariantError{Problems: problems}
	}
	return nil
}

// queryer is what invariantProblems reads through: the store's read pool,
// or one connection to a file that is not open as a Store (a backup).
type queryer interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// invariantProblems runs CheckInvariants' checks through q and returns
// what is broken, one line per kind.
func invariantProblems(ctx context.Context, q queryer) ([]string, error) {
	checks := []struct {
		what  string
		query string
	}{
		{"streams whose versions are not 1..n", `SELECT COUNT(*) FROM (SELECT tenant, stream_id FROM events
			GROUP BY tenant, stream_id HAVING MIN(version) != 1 OR MAX(version) != COUNT(*))`},
		{"streams without events", `SELECT COUNT(*) FROM streams s
			WHERE NOT EXISTS (SELECT 1 FROM events e WHERE e.tenant = s.tenant AND e.stream_id = s.stream_id)`},
		{"events without a stream row", `SELECT COUNT(*) FROM events e
			WHERE NOT EXISTS (SELECT 1 FROM streams s WHERE s.tenant = e.tenant AND s.stream_id = e.stream_id)`},
		{"events without an outbox row", outboxRowsQuery},
		{"outbox rows without an event", `SELECT COUNT(*) FROM outbox o
			WHERE NOT EXISTS (SELECT 1 FROM events e WHERE e.position = o.position)`},
		{"events whose position is not above their predecessor's in the stream", `SELECT COUNT(*) FROM events a
			JOIN events b ON b.tenant = a.tenant AND b.stream_id = a.stream_id AND b.version = a.version + 1
			WHERE b.position <= a.position`},
		{"holes in the global positions", `SELECT COUNT(*) FROM events a
			WHERE a.position > (SELECT MIN(position) FROM events)
			AND NOT EXISTS (SELECT 1 FROM events b WHERE b.position = a.position - 1)` + restoreGapClause},
	}
	// From schema 12 on a scavenge removes events: a stream's versions run
	// without gap from the lowest retained one, which is at most where its
	// reads start, and removed positions are recorded, not holes.
	removedTable, err := fileExec.TableExists(ctx, q, "removed_ranges")
	if err != nil {
		return nil, fmt.Errorf("check invariants: %w", mapErr(err))
	}
	if removedTable {
		checks[0].query = scavengedVersionsQuery
		checks[len(checks)-1].query += removedRangeClause
		checks = append(checks, lifecycleChecks...)
	}
	// From schema 15 on an append writes no outbox row: the watermark
	// says what is settled.
	watermark, err := fileExec.TableExists(ctx, q, "outbox_watermark")
	if err != nil {
		return nil, fmt.Errorf("check invariants: %w", mapErr(err))
	}
	if watermark {
		checks = slices.DeleteFunc(checks, func(c struct{ what, query string }) bool { return c.query == outboxRowsQuery })
		checks = append(checks, watermarkChecks...)
	}
	// A file older than the position_holes table has no restore gaps.
	holesTable, err := fileExec.TableExists(ctx, q, "position_holes")
	if err != nil {
		return nil, fmt.Errorf("check invariants: %w", mapErr(err))
	}
	if !holesTable {
		checks[len(checks)-1].query = strings.TrimSuffix(checks[len(checks)-1].query, restoreGapClause)
	}
	// From schema 14 on the writer hands out positions above the floor.
	floorTable, err := fileExec.TableExists(ctx, q, "position_floor")
	if err != nil {
		return nil, fmt.Errorf("check invariants: %w", mapErr(err))
	}
	if floorTable {
		checks = append(checks, floorChecks...)
	}
	var problems []string
	for _, c := range checks {
		var n int64
		if err := q.QueryRowContext(ctx, c.query).Scan(&n); err != nil {
			return nil, fmt.Errorf("check invariants: %w", mapErr(err))
		}
		if n > 0 {
			problems = append(problems, fmt.Sprintf("%d %s", n, c.what))
		}
	}
	rows, err := q.QueryContext(ctx, `PRAGMA integrity_check`)
	if err != nil {
		return nil, fmt.Errorf("check invariants: %w", mapErr(err))
	}
	defer rows.Close()
	for rows.Next() {
		var msg string
		if err := rows.Scan(&msg); err != nil {
			return nil, err
		}
		if msg != "ok" {
			problems = append(problems, "integrity_check: "+msg)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, mapErr(err)
	}
	return problems, nil
}

// outboxRowsQuery counts the events without an outbox row: a problem
// before schema 15, when every append wrote one.
const outboxRowsQuery = `SELECT COUNT(*) FROM events e
			WHERE NOT EXISTS (SELECT 1 FROM outbox o WHERE o.position = e.position)`

// watermarkChecks check the outbox's watermark (migration 0015): W
// (settled) and the cursor C (scanned), see outbox.go.
var watermarkChecks = []struct {
	what  string
	query string
}{
	{"outbox watermark rows other than one", `SELECT abs(COUNT(*) - 1) FROM outbox_watermark`},
	{"events at or below the outbox watermark that are not settled", `SELECT COUNT(*) FROM events e
		WHERE e.position <= (SELECT settled FROM outbox_watermark)
		AND NOT EXISTS (SELECT 1 FROM outbox o WHERE o.position = e.position AND (o.published_at IS NOT NULL OR o.discarded_at IS NOT NULL))`},
	{"pending events below the relay's cursor outside a stream with a failed row", `SELECT COUNT(*) FROM events e
		LEFT JOIN outbox o ON o.position = e.position
		WHERE e.position > (SELECT settled FROM outbox_watermark) AND e.position <= (SELECT scanned FROM outbox_watermark) AND ` + unsettled + `
		AND NOT EXISTS (SELECT 1 FROM outbox f JOIN events x ON x.position = f.position
			WHERE ` + failingRow + ` AND x.tenant = e.tenant AND x.stream_id = e.stream_id AND f.position <= e.position)`},
	{"outbox watermarks above the newest position", `SELECT COUNT(*) FROM outbox_watermark
		WHERE max(settled, scanned) > max(COALESCE((SELECT MAX(position) FROM events), 0),
			COALESCE((SELECT MAX(to_position) FROM removed_ranges), 0))`},
}

// scavengedVersionsQuery counts the streams whose versions are not
// first..n without gap, first being at most where their reads start
// (a scavenge removes versions below it, never the newest).
const scavengedVersionsQuery = `SELECT COUNT(*) FROM (SELECT e.tenant, e.stream_id FROM events e
	JOIN streams s ON s.tenant = e.tenant AND s.stream_id = e.stream_id
	GROUP BY e.tenant, e.stream_id
	HAVING MAX(e.version) - MIN(e.version) + 1 != COUNT(*) OR (MIN(e.version) != 1 AND MIN(e.version) > MIN(MAX(s.first_version), MAX(e.version))))`

// floorChecks check the position floor (migration 0014): one row, and no
// removed position at or above the next position handed out, which would
// hand it out again.
var floorChecks = []struct {
	what  string
	query string
}{
	{"position floor rows other than the one", `SELECT abs((SELECT COUNT(*) FROM position_floor) - 1)`},
	{"removed positions the next append would hand out again", `SELECT COUNT(*) FROM removed_ranges r
		WHERE r.to_position > max(COALESCE((SELECT MAX(position) FROM events), 0), COALESCE((SELECT MAX(position) FROM position_floor), 0))`},
}

// removedRangeClause excludes from the hole count the events just after
// a range a scavenge removed.
const removedRangeClause = `
			AND NOT EXISTS (SELECT 1 FROM removed_ranges r WHERE r.to_position = a.position - 1)`

// lifecycleChecks check the lifecycle columns (migration 0011) against
// the events present.
var lifecycleChecks = []struct {
	what  string
	query string
}{
	{"deleted streams whose newest event is not their tombstone", `SELECT COUNT(*) FROM streams s
		WHERE s.deleted != 0 AND NOT EXISTS (SELECT 1 FROM events e WHERE e.tenant = s.tenant AND e.stream_id = s.stream_id
			AND e.version = (SELECT MAX(version) FROM events n WHERE n.tenant = s.tenant AND n.stream_id = s.stream_id) AND e.type = '` + TypeStreamDeleted + `')`},
	{"streams whose reads start past their version plus one", `SELECT COUNT(*) FROM streams s
		WHERE s.first_version < 1
			OR s.first_version > COALESCE((SELECT MAX(version) FROM events e WHERE e.tenant = s.tenant AND e.stream_id = s.stream_id), 0) + 1`},
	{"removed event ids still in the log", `SELECT COUNT(*) FROM removed_event_ids r
		WHERE EXISTS (SELECT 1 FROM events e WHERE e.tenant = r.tenant AND e.event_id = r.event_id)`},
	{"removed positions still in the log", `SELECT COUNT(*) FROM removed_ranges r
		WHERE EXISTS (SELECT 1 FROM events e WHERE e.position BETWEEN r.from_position AND r.to_position)`},
}
