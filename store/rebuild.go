package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/eventlite/eventlite/store/internal/driver"
)

// Rebuilds is the bookkeeping of projection rebuilds, reached with
// Store.Rebuilds: the rebuild in progress per projection and the count of
// events a rebuild replays. Its writes (Bookkeeping: SaveRebuild,
// NewRebuildGeneration, DeleteRebuild) run in the rebuilder's
// Update transaction.
type Rebuilds struct{ s *Store }

// Rebuilds returns the store's rebuild bookkeeping.
func (s *Store) Rebuilds() *Rebuilds { return &Rebuilds{s: s} }

// Rebuild is a projection's rebuild in progress (package replay drives
// it): shadow copies of the projection's tables, named
// <table>__rb<Generation>, that hold every matching event of the log up to
// Checkpoint.
type Rebuild struct {
	Projection string
	// Generation names the shadow tables. A new rebuild (a first one, one
	// from scratch, or the next one after a swap) takes a new generation;
	// a resumed one keeps its own.
	Generation int64
	// Checkpoint: the shadow has applied every matching event up to and
	// including this position.
	Checkpoint int64
	// Watermark is the log head when the latest run of the rebuild began.
	Watermark int64
	// Applied counts the events applied to the shadow since the
	// generation began, over every run.
	Applied   int64
	StartedAt time.Time // when the generation began
	UpdatedAt time.Time
}

// ShadowTable is the name of table's shadow in generation gen.
func ShadowTable(table string, gen int64) string {
	return fmt.Sprintf("%s__rb%d", table, gen)
}

// rebuildOf is a stored row as callers see it.
func rebuildOf(r driver.RebuildRow) Rebuild {
	return Rebuild{Projection: r.Projection, Generation: r.Generation, Checkpoint: r.Checkpoint, Watermark: r.Watermark,
		Applied: r.Applied, StartedAt: time.Unix(0, r.StartedAt).UTC(), UpdatedAt: time.Unix(0, r.UpdatedAt).UTC()}
}

// Load returns the projection's rebuild in progress; ok is false
// when there is none.
func (r *Rebuilds) Load(ctx context.Context, projection string) (rb Rebuild, ok bool, err error) {
	s := r.s
	return s.loadRebuild(ctx, s.rdb, projection)
}

func (s *Store) loadRebuild(ctx context.Context, q driver.ReadQuerier, projection string) (Rebuild, bool, error) {
	row, ok, err := s.ex.LoadRebuild(ctx, q, projection)
	if err != nil {
		return Rebuild{}, false, fmt.Errorf("load rebuild of %s: %w", projection, mapErr(err))
	}
	if !ok {
		return Rebuild{}, false, nil
	}
	return rebuildOf(row), true, nil
}

// LoadRebuild is Rebuilds.Load inside an Update closure.
func (tx txBook) LoadRebuild(ctx context.Context, projection string) (rb Rebuild, ok bool, err error) {
	if err := tx.check(); err != nil {
		return Rebuild{}, false, err
	}
	return tx.s.loadRebuild(ctx, tx.s.wconn, projection)
}

// List lists every rebuild in progress (or left behind by a run that
// failed or was killed), by projection name.
func (r *Rebuilds) List(ctx context.Context) ([]Rebuild, error) {
	s := r.s
	rows, err := s.ex.ListRebuilds(ctx, s.rdb)
	if err != nil {
		return nil, mapErr(err)
	}
	var out []Rebuild
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
func (tx txBook) SaveRebuild(ctx context.Context, rb Rebuild) error {
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

// Rebuilds.CountEvents counts the events with after < position <= upto, only
// those of the given types when types is not empty. It reads that range
// of the log (of every type, the smaller of it and the rest: the whole
// log's count comes from its smallest index).
func (r *Rebuilds) CountEvents(ctx context.Context, after, upto int64, types []string) (int64, error) {
	s := r.s
	n, err := s.ex.CountEventsBetween(ctx, s.rdb, after, upto, types)
	if err != nil {
		return 0, fmt.Errorf("count events: %w", mapErr(err))
	}
	return n, nil
}
