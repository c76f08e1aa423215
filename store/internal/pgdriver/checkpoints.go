package pgdriver

import (
	"context"
	"database/sql"
	"errors"

	"github.com/eventlite/eventlite/store/internal/driver"
)

// Checkpoint reads the row. Inside a transaction (the writer's
// connection) it locks the row FOR UPDATE, so that the value holds until
// the transaction ends; on the read pool (a *sql.DB, or the store's
// wrapper of one, whose statements run alone and may be read-only) it
// reads without a lock. A lock there would make each read a transaction
// of its own that waits for its commit's WAL flush, wait for a writer
// that holds the row, and fail on a read-only store.
func (Exec) Checkpoint(ctx context.Context, q driver.ReadQuerier, name string) (int64, error) {
	query := `SELECT position FROM checkpoints WHERE name = $1`
	if !onPool(q) {
		query += ` FOR UPDATE`
	}
	var pos int64
	err := q.QueryRowContext(ctx, query, name).Scan(&pos)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	return pos, err
}

// setCheckpointSQL upserts the checkpoint ($1 name, $2 position, $3
// token, $4 updated_at).
const setCheckpointSQL = `INSERT INTO checkpoints (name, position, token, updated_at) VALUES ($1, $2, $3, $4)
		ON CONFLICT (name) DO UPDATE SET position = EXCLUDED.position, token = EXCLUDED.token, updated_at = EXCLUDED.updated_at`

// setFencedCheckpointSQL is CheckFence and the upsert in one statement
// (one round trip): the lease row ($5 resource, $6 owner, $3 token) is
// read and locked FOR SHARE until the transaction ends, the checkpoint
// is written only when the fence holds, and the answer is whether it
// held (false too when the lease has no row).
const setFencedCheckpointSQL = `WITH f AS (
		SELECT owner = $6 AND token = $3 AND expires_at > ` + nowMillis + ` AS ok FROM leases WHERE resource = $5 FOR SHARE
	), w AS (
		INSERT INTO checkpoints (name, position, token, updated_at) SELECT $1::text, $2::bigint, $3::bigint, $4::bigint FROM f WHERE f.ok
		ON CONFLICT (name) DO UPDATE SET position = EXCLUDED.position, token = EXCLUDED.token, updated_at = EXCLUDED.updated_at
	)
	SELECT COALESCE((SELECT ok FROM f), false)`

// SetCheckpoint checks the fence (the lease row locked FOR SHARE until
// the transaction ends), then upserts, in one statement.
func (Exec) SetCheckpoint(ctx context.Context, q driver.Querier, name string, position int64, fence *driver.Fence, now int64) (bool, error) {
	if fence == nil {
		_, err := q.ExecContext(ctx, setCheckpointSQL, name, position, 0, now)
		return err == nil, err
	}
	var ok bool
	if err := q.QueryRowContext(ctx, setFencedCheckpointSQL, name, position, fence.Token, now, fence.Resource, fence.Owner).Scan(&ok); err != nil {
		return false, err
	}
	return ok, nil
}

// onPool reports whether q is a connection pool: a *sql.DB, or a type
// that embeds one (the store's read pool). Each of its statements runs
// alone, outside any transaction of the store's.
func onPool(q driver.ReadQuerier) bool {
	_, pool := q.(interface{ Stats() sql.DBStats })
	return pool
}
