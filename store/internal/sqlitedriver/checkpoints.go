package sqlitedriver

import (
	"context"
	"database/sql"
	"errors"

	"github.com/eventlite/eventlite/store/internal/driver"
)

// Checkpoint reads the row.
func (Exec) Checkpoint(ctx context.Context, q driver.ReadQuerier, name string) (int64, error) {
	var pos int64
	err := q.QueryRowContext(ctx, `SELECT position FROM checkpoints WHERE name = ?`, name).Scan(&pos)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	return pos, err
}

// SetCheckpoint checks the fence, then upserts, both under the store's
// write lock.
func (e Exec) SetCheckpoint(ctx context.Context, q driver.Querier, name string, position int64, fence *driver.Fence, now int64) (bool, error) {
	var token int64
	if fence != nil {
		ok, err := e.CheckFence(ctx, q, *fence)
		if err != nil || !ok {
			return false, err
		}
		token = fence.Token
	}
	_, err := q.ExecContext(ctx, `INSERT INTO checkpoints (name, position, token, updated_at) VALUES (?, ?, ?, ?)
		ON CONFLICT (name) DO UPDATE SET position = excluded.position, token = excluded.token, updated_at = excluded.updated_at`,
		name, position, token, now)
	return err == nil, err
}

// Checkpoints reads the table.
func (Exec) Checkpoints(ctx context.Context, q driver.ReadQuerier) (map[string]int64, error) {
	rows, err := q.QueryContext(ctx, `SELECT name, position FROM checkpoints`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var n string
		var p int64
		if err := rows.Scan(&n, &p); err != nil {
			return nil, err
		}
		out[n] = p
	}
	return out, rows.Err()
}
