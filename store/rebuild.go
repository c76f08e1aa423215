package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Rebuilds is the bookkeeping of projection rebuilds, reached with
// Store.Rebuilds: the rebuild in progress per projection and the count of
// events a rebuild replays. Its writes (tx.SaveRebuild,
// tx.NewRebuildGeneration, tx.DeleteRebuild) run in the rebuilder's
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

const selectRebuild = `SELECT projection, generation, checkpoint, watermark, applied, started_at, updated_at FROM rebuilds`

func scanRebuild(r scanner) (Rebuild, error) {
	var rb Rebuild
	var started, updated int64
	if err := r.Scan(&rb.Projection, &rb.Generation, &rb.Checkpoint, &rb.Watermark, &rb.Applied, &started, &updated); err != nil {
		return Rebuild{}, err
	}
	rb.StartedAt, rb.UpdatedAt = time.Unix(0, started).UTC(), time.Unix(0, updated).UTC()
	return rb, nil
}

// Load returns the projection's rebuild in progress; ok is false
// when there is none.
func (r *Rebuilds) Load(ctx context.Context, projection string) (rb Rebuild, ok bool, err error) {
	s := r.s
	rb, err = scanRebuild(s.rdb.QueryRowContext(ctx, selectRebuild+` WHERE projection = ?`, projection))
	if errors.Is(err, sql.ErrNoRows) {
		return Rebuild{}, false, nil
	}
	if err != nil {
		return Rebuild{}, false, fmt.Errorf("load rebuild of %s: %w", projection, mapErr(err))
	}
	return rb, true, nil
}

// LoadRebuild is Rebuilds.Load inside an Update closure.
func (tx *Tx) LoadRebuild(ctx context.Context, projection string) (rb Rebuild, ok bool, err error) {
	if err := tx.check(); err != nil {
		return Rebuild{}, false, err
	}
	s := tx.s
	rb, err = scanRebuild(s.wconn.QueryRowContext(ctx, selectRebuild+` WHERE projection = ?`, projection))
	if errors.Is(err, sql.ErrNoRows) {
		return Rebuild{}, false, nil
	}
	if err != nil {
		return Rebuild{}, false, fmt.Errorf("load rebuild of %s: %w", projection, mapErr(err))
	}
	return rb, true, nil
}

// List lists every rebuild in progress (or left behind by a run that
// failed or was killed), by projection name.
func (r *Rebuilds) List(ctx context.Context) ([]Rebuild, error) {
	s := r.s
	rows, err := s.rdb.QueryContext(ctx, selectRebuild+` ORDER BY projection`)
	if err != nil {
		return nil, mapErr(err)
	}
	defer rows.Close()
	var out []Rebuild
	for rows.Next() {
		rb, err := scanRebuild(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, rb)
	}
	return out, mapErr(rows.Err())
}

// NewRebuildGeneration hands out the projection's next rebuild
// generation: never one handed out before, even after the rebuild row is
// gone (a swapped-in table keeps its shadow's index names).
func (tx *Tx) NewRebuildGeneration(ctx context.Context, projection string) (int64, error) {
	if err := tx.check(); err != nil {
		return 0, err
	}
	s := tx.s
	var gen int64
	err := s.wconn.QueryRowContext(ctx, `INSERT INTO rebuild_generations (projection, generation) VALUES (?, 1)
		ON CONFLICT (projection) DO UPDATE SET generation = generation + 1
		RETURNING generation`, projection).Scan(&gen)
	if err != nil {
		return 0, fmt.Errorf("new rebuild generation for %s: %w", projection, mapErr(err))
	}
	return gen, nil
}

// SaveRebuild writes the projection's rebuild row (inserting or
// replacing it), stamping UpdatedAt with the transaction's time and
// StartedAt with it too when zero.
func (tx *Tx) SaveRebuild(ctx context.Context, rb Rebuild) error {
	if err := tx.check(); err != nil {
		return err
	}
	s := tx.s
	if rb.Projection == "" || rb.Generation <= 0 {
		return errors.New("store: tx.SaveRebuild needs a projection and a generation")
	}
	started := tx.now
	if !rb.StartedAt.IsZero() {
		started = rb.StartedAt.UnixNano()
	}
	_, err := s.wconn.ExecContext(ctx, `INSERT INTO rebuilds (projection, generation, checkpoint, watermark, applied, started_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (projection) DO UPDATE SET generation = excluded.generation, checkpoint = excluded.checkpoint,
			watermark = excluded.watermark, applied = excluded.applied, started_at = excluded.started_at, updated_at = excluded.updated_at`,
		rb.Projection, rb.Generation, rb.Checkpoint, rb.Watermark, rb.Applied, started, tx.now)
	if err != nil {
		return fmt.Errorf("save rebuild of %s: %w", rb.Projection, mapErr(err))
	}
	return nil
}

// DeleteRebuild removes the projection's rebuild row (its generation
// stays used).
func (tx *Tx) DeleteRebuild(ctx context.Context, projection string) error {
	if err := tx.check(); err != nil {
		return err
	}
	s := tx.s
	if _, err := s.wconn.ExecContext(ctx, `DELETE FROM rebuilds WHERE projection = ?`, projection); err != nil {
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
	q := `SELECT count(*) FROM events WHERE position > ? AND position <= ?`
	args := []any{after, upto}
	if len(types) == 0 {
		// Counting a range walks the table's pages; counting the whole
		// table reads an index a tenth of its size. Most of the log:
		// count the whole and take away the rest.
		q = `SELECT CASE WHEN ?2 - ?1 > (SELECT COALESCE(MAX(position), 0) FROM events) / 2
			THEN (SELECT count(*) FROM events) - (SELECT count(*) FROM events WHERE position <= ?1)
				- (SELECT count(*) FROM events WHERE position > ?2)
			ELSE (SELECT count(*) FROM events WHERE position > ?1 AND position <= ?2) END`
	} else {
		q += ` AND type IN (?` + strings.Repeat(", ?", len(types)-1) + `)`
		for _, t := range types {
			args = append(args, t)
		}
	}
	var n int64
	if err := s.rdb.QueryRowContext(ctx, q, args...).Scan(&n); err != nil {
		return 0, fmt.Errorf("count events: %w", mapErr(err))
	}
	return n, nil
}
