package sqlshared

import (
	"context"
	"database/sql"

	"github.com/eventlite/eventlite/store/internal/driver"
)

// PositionSpan reads min and count over the range in one statement.
func (x Exec[D]) PositionSpan(ctx context.Context, q driver.ReadQuerier, after, upto int64) (int64, int64, bool, error) {
	var lo sql.NullInt64
	var n int64
	if err := q.QueryRowContext(ctx, x.bind(`SELECT min(position), count(*) FROM events WHERE position > ? AND position <= ?`), after, upto).Scan(&lo, &n); err != nil {
		return 0, 0, false, err
	}
	return lo.Int64, n, lo.Valid, nil
}

// RemovedRangesIn reads removed_ranges.
func (x Exec[D]) RemovedRangesIn(ctx context.Context, q driver.ReadQuerier, from, to int64) ([]driver.PositionRun, error) {
	rows, err := q.QueryContext(ctx, x.bind(`SELECT from_position, to_position FROM removed_ranges WHERE from_position <= ? AND to_position >= ? ORDER BY from_position`), to, from)
	return positionRuns(rows, err)
}

// PositionGaps finds every stored event whose successor position is not
// stored, and the next stored position after it, by the event's
// position.
func (x Exec[D]) PositionGaps(ctx context.Context, q driver.ReadQuerier, from, upto int64) ([]driver.PositionRun, error) {
	rows, err := q.QueryContext(ctx, x.bind(`SELECT a.position + 1, (SELECT min(b.position) FROM events b WHERE b.position > a.position) - 1
		FROM events a WHERE a.position >= ? AND a.position < ?
		AND NOT EXISTS (SELECT 1 FROM events c WHERE c.position = a.position + 1)
		ORDER BY a.position`), from, upto)
	return positionRuns(rows, err)
}

// positionRuns scans rows of (from, to) into runs, for the queries of
// both removed ranges and gaps. A NULL to is the gap past the newest
// event, not a hole, and is skipped; removed_ranges.to_position is NOT
// NULL, so it skips nothing there.
func positionRuns(rows *sql.Rows, err error) ([]driver.PositionRun, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []driver.PositionRun
	for rows.Next() {
		var r driver.PositionRun
		var to sql.NullInt64
		if err := rows.Scan(&r.From, &to); err != nil {
			return nil, err
		}
		if !to.Valid {
			continue
		}
		r.To = to.Int64
		out = append(out, r)
	}
	return out, rows.Err()
}

// RecordHole inserts, keeping a row already there.
func (x Exec[D]) RecordHole(ctx context.Context, q driver.Querier, h driver.HoleRow, now int64) error {
	_, err := q.ExecContext(ctx, x.bind(`INSERT INTO position_holes (from_position, to_position, detected_by, detected_at) VALUES (?, ?, ?, ?)
		ON CONFLICT (from_position) DO NOTHING`), h.From, h.To, h.DetectedBy, now)
	return err
}

// RecordedHoles reads position_holes.
func (Exec[D]) RecordedHoles(ctx context.Context, q driver.ReadQuerier) ([]driver.HoleRow, error) {
	rows, err := q.QueryContext(ctx, `SELECT from_position, to_position, detected_by, detected_at FROM position_holes ORDER BY from_position`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []driver.HoleRow
	for rows.Next() {
		var h driver.HoleRow
		if err := rows.Scan(&h.From, &h.To, &h.DetectedBy, &h.DetectedAt); err != nil {
			return nil, err
		}
		out = append(out, h)
	}
	return out, rows.Err()
}

// HolesDetectedBy reads position_holes.
func (x Exec[D]) HolesDetectedBy(ctx context.Context, q driver.ReadQuerier, detectedBy string) ([]driver.FileHole, error) {
	return driver.ReadHoles(ctx, q, x.bind(`SELECT from_position, to_position FROM position_holes WHERE detected_by = ? ORDER BY from_position`), detectedBy)
}
