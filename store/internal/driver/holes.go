package driver

import "context"

// Holes is the log's bookkeeping of missing positions: the runs of
// positions between stored events that readers find (a hole never fills
// on an engine that assigns positions in commit order), and the ones
// they recorded passing.
type Holes interface {
	// PositionSpan reads, in one snapshot, the lowest stored position in
	// after < position <= upto and how many positions of that range are
	// stored; ok is false when none is.
	PositionSpan(ctx context.Context, q ReadQuerier, after, upto int64) (lowest, count int64, ok bool, err error)
	// RemovedRangesIn lists the ranges a scavenge removed that overlap
	// from..to, by their first position; none for no such range.
	RemovedRangesIn(ctx context.Context, q ReadQuerier, from, to int64) ([]PositionRun, error)
	// PositionGaps lists the runs of missing positions that follow a
	// stored event at from <= position < upto and end before the next
	// stored event, by their first position. A run past the newest event
	// is not a gap and is not listed. Removed ranges are not taken out.
	PositionGaps(ctx context.Context, q ReadQuerier, from, upto int64) ([]PositionRun, error)
	// RecordHole records a hole a reader passed; one already recorded at
	// that first position is kept as it is. now is unix nanoseconds.
	RecordHole(ctx context.Context, q Querier, h HoleRow, now int64) error
	// RecordedHoles lists the recorded holes by first position.
	RecordedHoles(ctx context.Context, q ReadQuerier) ([]HoleRow, error)
	// HolesDetectedBy lists the recorded holes that detectedBy left
	// (a restore's, Files.RecordRestoreHole); none for none.
	HolesDetectedBy(ctx context.Context, q ReadQuerier, detectedBy string) ([]FileHole, error)
}

// PositionRun is the positions From..To, both included.
type PositionRun struct{ From, To int64 }

// HoleRow is a recorded hole.
type HoleRow struct {
	From, To   int64
	DetectedBy string
	DetectedAt int64 // unix nanoseconds; RecordHole stamps it
}
