package sqlitedriver

import (
	"context"
	"database/sql"
	"errors"
	"strings"

	"github.com/eventlite/eventlite/store/internal/driver"
)

const selectRebuild = `SELECT projection, generation, checkpoint, watermark, applied, started_at, updated_at FROM rebuilds`

type scanner interface{ Scan(dest ...any) error }

func scanRebuild(r scanner) (driver.RebuildRow, error) {
	var rb driver.RebuildRow
	err := r.Scan(&rb.Projection, &rb.Generation, &rb.Checkpoint, &rb.Watermark, &rb.Applied, &rb.StartedAt, &rb.UpdatedAt)
	return rb, err
}

// LoadRebuild reads the row.
func (Exec) LoadRebuild(ctx context.Context, q driver.ReadQuerier, projection string) (driver.RebuildRow, bool, error) {
	rb, err := scanRebuild(q.QueryRowContext(ctx, selectRebuild+` WHERE projection = ?`, projection))
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

// NewRebuildGeneration upserts with RETURNING.
func (Exec) NewRebuildGeneration(ctx context.Context, q driver.Querier, projection string) (int64, error) {
	var gen int64
	err := q.QueryRowContext(ctx, `INSERT INTO rebuild_generations (projection, generation) VALUES (?, 1)
		ON CONFLICT (projection) DO UPDATE SET generation = generation + 1
		RETURNING generation`, projection).Scan(&gen)
	return gen, err
}

// SaveRebuild upserts the row.
func (Exec) SaveRebuild(ctx context.Context, q driver.Querier, rb driver.RebuildRow) error {
	_, err := q.ExecContext(ctx, `INSERT INTO rebuilds (projection, generation, checkpoint, watermark, applied, started_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (projection) DO UPDATE SET generation = excluded.generation, checkpoint = excluded.checkpoint,
			watermark = excluded.watermark, applied = excluded.applied, started_at = excluded.started_at, updated_at = excluded.updated_at`,
		rb.Projection, rb.Generation, rb.Checkpoint, rb.Watermark, rb.Applied, rb.StartedAt, rb.UpdatedAt)
	return err
}

// DeleteRebuild deletes the row.
func (Exec) DeleteRebuild(ctx context.Context, q driver.Querier, projection string) error {
	_, err := q.ExecContext(ctx, `DELETE FROM rebuilds WHERE projection = ?`, projection)
	return err
}

// CountEventsBetween counts a range of the log; without types, when the
// range is most of the log, it counts the whole and takes away the rest.
func (Exec) CountEventsBetween(ctx context.Context, q driver.ReadQuerier, after, upto int64, types []string) (int64, error) {
	query := `SELECT count(*) FROM events WHERE position > ? AND position <= ?`
	args := []any{after, upto}
	if len(types) == 0 {
		// Counting a range walks the table's pages; counting the whole
		// table reads an index a tenth of its size. Most of the log:
		// count the whole and take away the rest.
		query = `SELECT CASE WHEN ?2 - ?1 > (SELECT COALESCE(MAX(position), 0) FROM events) / 2
			THEN (SELECT count(*) FROM events) - (SELECT count(*) FROM events WHERE position <= ?1)
				- (SELECT count(*) FROM events WHERE position > ?2)
			ELSE (SELECT count(*) FROM events WHERE position > ?1 AND position <= ?2) END`
	} else {
		query += ` AND type IN (?` + strings.Repeat(", ?", len(types)-1) + `)`
		for _, t := range types {
			args = append(args, t)
		}
	}
	var n int64
	err := q.QueryRowContext(ctx, query, args...).Scan(&n)
	return n, err
}
