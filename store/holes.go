package store

import (
	"context"
	"database/sql"
	"time"
)

// Hole is a run of missing global positions between two stored events.
type Hole struct {
	From, To   int64 // inclusive
	DetectedBy string
	DetectedAt time.Time
}

// HolesBetween finds the holes among positions after and up to upto: runs
// of missing positions between stored events. It reads on the read pool.
func (p *Projections) HolesBetween(ctx context.Context, after, upto int64) ([]Hole, error) {
	s := p.s
	var lo sql.NullInt64
	var n int64
	if err := s.rdb.QueryRowContext(ctx, `SELECT MIN(position), count(*) FROM events WHERE position > ? AND position <= ?`, after, upto).Scan(&lo, &n); err != nil {
		return nil, mapErr(err)
	}
	if !lo.Valid || n == upto-lo.Int64+1 {
		return nil, nil
	}
	removed, err := p.removedRanges(ctx, lo.Int64, upto)
	if err != nil {
		return nil, err
	}
	if n+removedCount(removed, lo.Int64, upto) == upto-lo.Int64+1 {
		return nil, nil
	}
	rows, err := s.rdb.QueryContext(ctx, `SELECT position + 1, (SELECT MIN(b.position) FROM events b WHERE b.position > a.position) - 1
		FROM events a WHERE a.position >= ? AND a.position < ?
		AND NOT EXISTS (SELECT 1 FROM events c WHERE c.position = a.position + 1)`, lo.Int64, upto)
	if err != nil {
		return nil, mapErr(err)
	}
	defer rows.Close()
	var out []Hole
	for rows.Next() {
		var h Hole
		var to sql.NullInt64
		if err := rows.Scan(&h.From, &to); err != nil {
			return nil, err
		}
		if !to.Valid {
			continue // past the newest event: not a hole
		}
		h.To = to.Int64
		out = append(out, subtractRanges(h, removed)...)
	}
	return out, mapErr(rows.Err())
}

// removedRanges lists the ranges a scavenge removed that overlap from..to.
func (p *Projections) removedRanges(ctx context.Context, from, to int64) ([]PositionRange, error) {
	var out []PositionRange
	err := p.s.eachRow(ctx, func(r *sql.Rows) error {
		var pr PositionRange
		err := r.Scan(&pr.From, &pr.To)
		out = append(out, pr)
		return err
	}, `SELECT from_position, to_position FROM removed_ranges WHERE from_position <= ? AND to_position >= ? ORDER BY from_position`, to, from)
	return out, err
}

// removedCount counts the positions from..to that rs cover.
func removedCount(rs []PositionRange, from, to int64) int64 {
	var n int64
	for _, r := range rs {
		if lo, hi := max(r.From, from), min(r.To, to); lo <= hi {
			n += hi - lo + 1
		}
	}
	return n
}

// subtractRanges returns what of h the removed ranges rs (sorted, not
// overlapping) do not cover: removed positions are not holes.
func subtractRanges(h Hole, rs []PositionRange) []Hole {
	var out []Hole
	from := h.From
	for _, r := range rs {
		if r.To < from || r.From > h.To {
			continue
		}
		if r.From > from {
			part := h
			part.From, part.To = from, r.From-1
			out = append(out, part)
		}
		from = r.To + 1
	}
	if from <= h.To {
		part := h
		part.From = from
		out = append(out, part)
	}
	return out
}

// RecordHole records a hole a reader passed.
func (tx *Tx) RecordHole(ctx context.Context, h Hole) error {
	if err := tx.check(); err != nil {
		return err
	}
	s := tx.s
	_, err := s.wconn.ExecContext(ctx, `INSERT INTO position_holes (from_position, to_position, detected_by, detected_at) VALUES (?, ?, ?, ?)
		ON CONFLICT (from_position) DO NOTHING`, h.From, h.To, h.DetectedBy, tx.now)
	return mapErr(err)
}

// RecordedHoles lists the holes readers recorded.
func (p *Projections) RecordedHoles(ctx context.Context) ([]Hole, error) {
	s := p.s
	rows, err := s.rdb.QueryContext(ctx, `SELECT from_position, to_position, detected_by, detected_at FROM position_holes ORDER BY from_position`)
	if err != nil {
		return nil, mapErr(err)
	}
	defer rows.Close()
	var out []Hole
	for rows.Next() {
		var h Hole
		var at int64
		if err := rows.Scan(&h.From, &h.To, &h.DetectedBy, &at); err != nil {
			return nil, err
		}
		h.DetectedAt = time.Unix(0, at).UTC()
		out = append(out, h)
	}
	return out, mapErr(rows.Err())
}
