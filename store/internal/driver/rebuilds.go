package driver

import "context"

// Rebuilds is the bookkeeping of projection rebuilds: the rebuild in
// progress per projection and the generations handed out. Times are unix
// nanoseconds.
type Rebuilds interface {
	// LoadRebuild reads the projection's rebuild row; ok is false when
	// there is none.
	LoadRebuild(ctx context.Context, q ReadQuerier, projection string) (rb RebuildRow, ok bool, err error)
	// ListRebuilds lists every rebuild row by projection.
	ListRebuilds(ctx context.Context, q ReadQuerier) ([]RebuildRow, error)
	// NewRebuildGeneration hands out the projection's next generation,
	// 1 for its first. Reading the last and writing the next are one
	// statement (INSERT ... ON CONFLICT DO UPDATE ... RETURNING), so that
	// no generation is handed out twice, even after its rebuild row is
	// gone.
	NewRebuildGeneration(ctx context.Context, q Querier, projection string) (int64, error)
	// SaveRebuild inserts or replaces the projection's rebuild row.
	SaveRebuild(ctx context.Context, q Querier, rb RebuildRow) error
	// DeleteRebuild removes the projection's rebuild row, if any.
	DeleteRebuild(ctx context.Context, q Querier, projection string) error
	// CountEventsBetween counts the events with after < position <= upto,
	// only those of the given types when types is not empty.
	CountEventsBetween(ctx context.Context, q ReadQuerier, after, upto int64, types []string) (int64, error)
}

// RebuildRow is a projection's rebuild in progress.
type RebuildRow struct {
	Projection                                 string
	Generation, Checkpoint, Watermark, Applied int64
	StartedAt, UpdatedAt                       int64 // unix nanoseconds
}
