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
