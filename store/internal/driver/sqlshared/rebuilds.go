package sqlshared

import (
	"context"
	"database/sql"
	"errors"

	"github.com/eventlite/eventlite/store/internal/driver"
)

const selectRebuild = `SELECT projection, generation, checkpoint, watermark, applied, started_at, updated_at FROM rebuilds`

func scanRebuild(r scanner) (driver.RebuildRow, error) {
	var rb driver.RebuildRow
	err := r.Scan(&rb.Projection, &rb.Generation, &rb.Checkpoint, &rb.Watermark, &rb.Applied, &rb.StartedAt, &rb.UpdatedAt)
	return rb, err
}

// LoadRebuild reads the row.
func (x Exec[D]) LoadRebuild(ctx context.Context, q driver.ReadQuerier, projection string) (driver.RebuildRow, bool, error) {
	rb, err := scanRebuild(q.QueryRowContext(ctx, x.bind(selectRebuild+` WHERE projection = ?`), projection))
	if errors.Is(err, sql.ErrNoRows) {
		return driver.RebuildRow{}, false, nil
	}
	if err != nil {
		return driver.RebuildRow{}, false, err
	}
	return rb, true, nil
}

// ListRebuilds reads the table.
func (x Exec[D]) ListRebuilds(ctx context.Context, q driver.ReadQuerier) ([]driver.RebuildRow, error) {
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

// NewRebuildGeneration upserts with RETURNING.
func (x Exec[D]) NewRebuildGeneration(ctx context.Context, q driver.Querier, projection string) (int64, error) {
	var gen int64
	err := q.QueryRowContext(ctx, x.bind(`INSERT INTO rebuild_generations (projection, generation) VALUES (?, 1)
		ON CONFLICT (projection) DO UPDATE SET generation = rebuild_generations.generation + 1
		RETURNING generation`), projection).Scan(&gen)
	return gen, err
}

// SaveRebuild upserts the row.
func (x Exec[D]) SaveRebuild(ctx context.Context, q driver.Querier, rb driver.RebuildRow) error {
	_, err := q.ExecContext(ctx, x.bind(`INSERT INTO rebuilds (projection, generation, checkpoint, watermark, applied, started_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (projection) DO UPDATE SET generation = EXCLUDED.generation, checkpoint = EXCLUDED.checkpoint,
			watermark = EXCLUDED.watermark, applied = EXCLUDED.applied, started_at = EXCLUDED.started_at, updated_at = EXCLUDED.updated_at`),
		rb.Projection, rb.Generation, rb.Checkpoint, rb.Watermark, rb.Applied, rb.StartedAt, rb.UpdatedAt)
	return err
}

// DeleteRebuild deletes the row.
func (x Exec[D]) DeleteRebuild(ctx context.Context, q driver.Querier, projection string) error {
	_, err := q.ExecContext(ctx, x.bind(`DELETE FROM rebuilds WHERE projection = ?`), projection)
	return err
}
