package store

import (
	"context"
	"time"

	"github.com/eventlite/eventlite/internal/projrow"
	"github.com/eventlite/eventlite/store/internal/driver"
)

// hole is a run of missing global positions between two stored events
// (projection.Hole).
type hole = projrow.Hole

// holesBetween finds the holes among positions after and up to upto: runs
// of missing positions between stored events. It reads on the read pool.
func (s *Store) holesBetween(ctx context.Context, after, upto int64) ([]hole, error) {
	lo, n, ok, err := s.ex.PositionSpan(ctx, s.rdb, after, upto)
	if err != nil {
		return nil, mapErr(err)
	}
	if !ok || n == upto-lo+1 {
		return nil, nil
	}
	removed, err := s.removedRanges(ctx, lo, upto)
	if err != nil {
		return nil, err
	}
	if n+removedCount(removed, lo, upto) == upto-lo+1 {
		return nil, nil
	}
	gaps, err := s.ex.PositionGaps(ctx, s.rdb, lo, upto)
	if err != nil {
		return nil, mapErr(err)
	}
	var out []hole
	for _, g := range gaps {
		out = append(out, subtractRanges(hole{From: g.From, To: g.To}, removed)...)
	}
	return out, nil
}

// removedRanges lists the ranges a scavenge removed that overlap from..to.
func (s *Store) removedRanges(ctx context.Context, from, to int64) ([]positionRange, error) {
	rs, err := s.ex.RemovedRangesIn(ctx, s.rdb, from, to)
	if err != nil {
		return nil, mapErr(err)
	}
	var out []positionRange
	for _, r := range rs {
		out = append(out, positionRange{From: r.From, To: r.To})
	}
	return out, nil
}

// removedCount counts the positions from..to that rs cover.
func removedCount(rs []positionRange, from, to int64) int64 {
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
func subtractRanges(h hole, rs []positionRange) []hole {
	var out []hole
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
func (tx txBook) RecordHole(ctx context.Context, h projrow.Hole) error {
	if err := tx.check(); err != nil {
		return err
	}
	s := tx.s
	return mapErr(s.ex.RecordHole(ctx, s.wconn, driver.HoleRow{From: h.From, To: h.To, DetectedBy: h.DetectedBy}, tx.now))
}

// recordedHoles lists the holes readers recorded.
func (s *Store) recordedHoles(ctx context.Context) ([]hole, error) {
	rows, err := s.ex.RecordedHoles(ctx, s.rdb)
	if err != nil {
		return nil, mapErr(err)
	}
	var out []hole
	for _, r := range rows {
		out = append(out, hole{From: r.From, To: r.To, DetectedBy: r.DetectedBy, DetectedAt: time.Unix(0, r.DetectedAt).UTC()})
	}
	return out, nil
}
