package pgdriver

import (
	"context"
	"database/sql"
	"errors"

	"github.com/eventlite/eventlite/store/internal/driver"
)

const selectRebuild = `SELECT projection, generation, checkpoint, watermark, applied, started_at, updated_at FROM rebuilds`

func scanRebuild(r interface{ Scan(dest ...any) error }) (driver.RebuildRow, error) {
	var rb driver.RebuildRow
	err := r.Scan(&rb.Projection, &rb.Generation, &rb.Checkpoint, &rb.Watermark, &rb.Applied, &rb.StartedAt, &rb.UpdatedAt)
	return rb, err
}

// LoadRebuild reads the row.
func (Exec) LoadRebuild(ctx context.Context, q driver.ReadQuerier, projection string) (driver.RebuildRow, bool, error) {
	rb, err := scanRebuild(q.QueryRowContext(ctx, selectRebuild+` WHERE projection = $1`, projection))
	if errors.Is(err, sql.ErrNoRows) {
		return driver.RebuildRow{}, false, nil
	}
	if err != nil {
		return driver.RebuildRow{}, false, err
	}
	return rb, true, nil
}

// ListRebuilds reads the table.
func (Exec) ListRebuilds(ctx context.Context, q driver.ReadQuerier) ([]driver.RebuildRow, error) {
	rows, err := q.QueryContext(ctx, selectRebuild+` ORDER BY projection`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []driver.RebuildRow
	for rows.Next() {
		rb, err := scanRebuild(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, rb)
	}
	return out, rows.Err()
}

// NewRebuildGeneration upserts with RETURNING: the conflicting row is
// locked and moved in the one statement.
func (Exec) NewRebuildGeneration(ctx context.Context, q driver.Querier, projection string) (int64, error) {
	var gen int64
	err := q.QueryRowContext(ctx, `INSERT INTO rebuild_generations (projection, generation) VALUES ($1, 1)
		ON CONFLICT (projection) DO UPDATE SET generation = rebuild_generations.generation + 1
		RETURNING generation`, projection).Scan(&gen)
	return gen, err
}

// SaveRebuild upserts the row.
func (Exec) SaveRebuild(ctx context.Context, q driver.Querier, rb driver.RebuildRow) error {
	_, err := q.ExecContext(ctx, `INSERT INTO rebuilds (projection, generation, checkpoint, watermark, applied, started_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7)
		ON CONFLICT (projection) DO UPDATE SET generation = EXCLUDED.generation, checkpoint = EXCLUDED.checkpoint,
			watermark = EXCLUDED.watermark, applied = EXCLUDED.applied, started_at = EXCLUDED.started_at, updated_at = EXCLUDED.updated_at`,
		rb.Projection, rb.Generation, rb.Checkpoint, rb.Watermark, rb.Applied, rb.StartedAt, rb.UpdatedAt)
	return err
}

// DeleteRebuild deletes the row.
func (Exec) DeleteRebuild(ctx context.Context, q driver.Querier, projection string) error {
	_, err := q.ExecContext(ctx, `DELETE FROM rebuilds WHERE projection = $1`, projection)
	return err
}

// CountEventsBetween counts a range of the primary key's index, of the
// given types only when types is not empty.
func (Exec) CountEventsBetween(ctx context.Context, q driver.ReadQuerier, after, upto int64, types []string) (int64, error) {
	query := `SELECT count(*) FROM events WHERE position > $1 AND position <= $2`
	args := []any{after, upto}
	if len(types) > 0 {
		query += ` AND type = ANY($3)`
		args = append(args, types)
	}
	var n int64
	err := q.QueryRowContext(ctx, query, args...).Scan(&n)
	return n, err
}
