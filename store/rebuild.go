package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/eventlite/eventlite/internal/projrow"
	"github.com/eventlite/eventlite/store/internal/driver"
)

// rebuildOf is a stored row as callers see it.
func rebuildOf(r driver.RebuildRow) projrow.Rebuild {
	return projrow.Rebuild{Projection: r.Projection, Generation: r.Generation, Checkpoint: r.Checkpoint, Watermark: r.Watermark,
		Applied: r.Applied, StartedAt: time.Unix(0, r.StartedAt).UTC(), UpdatedAt: time.Unix(0, r.UpdatedAt).UTC()}
}

func (s *Store) loadRebuild(ctx context.Context, q driver.ReadQuerier, projection string) (projrow.Rebuild, bool, error) {
	row, ok, err := s.ex.LoadRebuild(ctx, q, projection)
	if err != nil {
		return projrow.Rebuild{}, false, fmt.Errorf("load rebuild of %s: %w", projection, mapErr(err))
	}
	if !ok {
		return projrow.Rebuild{}, false, nil
	}
	return rebuildOf(row), true, nil
}

// LoadRebuild is projection.RebuildLog.Load inside an Update closure.
func (tx txBook) LoadRebuild(ctx context.Context, projection string) (rb projrow.Rebuild, ok bool, err error) {
	if err := tx.check(); err != nil {
		return projrow.Rebuild{}, false, err
	}
	return tx.s.loadRebuild(ctx, tx.s.wconn, projection)
}

// listRebuilds lists every rebuild in progress (or left behind by a run
// that failed or was killed), by projection name.
func (s *Store) listRebuilds(ctx context.Context) ([]projrow.Rebuild, error) {
	rows, err := s.ex.ListRebuilds(ctx, s.rdb)
	if err != nil {
		return nil, mapErr(err)
	}
	var out []projrow.Rebuild
	for _, row := range rows {
		out = append(out, rebuildOf(row))
	}
	return out, nil
}

// NewRebuildGeneration hands out the projection's next rebuild
// generation: never one handed out before, even after the rebuild row is
// gone (a swapped-in table keeps its shadow's index names).
func (tx txBook) NewRebuildGeneration(ctx context.Context, projection string) (int64, error) {
	if err := tx.check(); err != nil {
		return 0, err
	}
	s := tx.s
	gen, err := s.ex.NewRebuildGeneration(ctx, s.wconn, projection)
	if err != nil {
		return 0, fmt.Errorf("new rebuild generation for %s: %w", projection, mapErr(err))
	}
	return gen, nil
}

// SaveRebuild writes the projection's rebuild row (inserting or
// replacing it), stamping UpdatedAt with the transaction's time and
// StartedAt with it too when zero.
func (tx txBook) SaveRebuild(ctx context.Context, rb projrow.Rebuild) error {
	if err := tx.check(); err != nil {
		return err
	}
	s := tx.s
	if rb.Projection == "" || rb.Generation <= 0 {
		return errors.New("store: SaveRebuild needs a projection and a generation")
	}
	started := tx.now
	if !rb.StartedAt.IsZero() {
		started = rb.StartedAt.UnixNano()
	}
	err := s.ex.SaveRebuild(ctx, s.wconn, driver.RebuildRow{Projection: rb.Projection, Generation: rb.Generation, Checkpoint: rb.Checkpoint,
		Watermark: rb.Watermark, Applied: rb.Applied, StartedAt: started, UpdatedAt: tx.now})
	if err != nil {
		return fmt.Errorf("save rebuild of %s: %w", rb.Projection, mapErr(err))
	}
	return nil
}

// DeleteRebuild removes the projection's rebuild row (its generation
// stays used).
func (tx txBook) DeleteRebuild(ctx context.Context, projection string) error {
	if err := tx.check(); err != nil {
		return err
	}
	s := tx.s
	if err := s.ex.DeleteRebuild(ctx, s.wconn, projection); err != nil {
		return fmt.Errorf("delete rebuild of %s: %w", projection, mapErr(err))
	}
	return nil
}

// countEvents counts the events with after < position <= upto, only
// those of the given types when types is not empty. It reads that range
// of the log (of every type, the smaller of it and the rest: the whole
// log's count comes from its smallest index).
func (s *Store) countEvents(ctx context.Context, after, upto int64, types []string) (int64, error) {
	n, err := s.ex.CountEventsBetween(ctx, s.rdb, after, upto, types)
	if err != nil {
		return 0, fmt.Errorf("count events: %w", mapErr(err))
	}
	return n, nil
}
