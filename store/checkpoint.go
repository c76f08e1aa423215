package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// Checkpoint returns the position the named projection has applied up
// to, 0 when it has none. It reads the read pool: inside an Update
// closure, read tx.Checkpoint.
func (p *Projections) Checkpoint(ctx context.Context, name string) (int64, error) {
	s := p.s
	var pos int64
	err := s.rdb.QueryRowContext(ctx, `SELECT position FROM checkpoints WHERE name = ?`, name).Scan(&pos)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	return pos, mapErr(err)
}

// Checkpoint reads a checkpoint inside an Update closure.
func (tx *Tx) Checkpoint(ctx context.Context, name string) (int64, error) {
	if err := tx.check(); err != nil {
		return 0, err
	}
	s := tx.s
	var p int64
	err := s.wconn.QueryRowContext(ctx, `SELECT position FROM checkpoints WHERE name = ?`, name).Scan(&p)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	return p, mapErr(err)
}

// SetCheckpoint moves a checkpoint inside an Update closure, in the
// transaction of the reader's own writes. With a lease it is fenced: it
// fails with ErrStaleFence unless the lease is current. A nil lease writes
// unfenced (on-demand readers that hold no lease).
func (tx *Tx) SetCheckpoint(ctx context.Context, name string, position int64, lease *Lease) error {
	if err := tx.check(); err != nil {
		return err
	}
	s := tx.s
	var token int64
	if lease != nil {
		if err := tx.CheckFence(ctx, *lease); err != nil {
			return err
		}
		token = lease.Token
	}
	_, err := s.wconn.ExecContext(ctx, `INSERT INTO checkpoints (name, position, token, updated_at) VALUES (?, ?, ?, ?)
		ON CONFLICT (name) DO UPDATE SET position = excluded.position, token = excluded.token, updated_at = excluded.updated_at`,
		name, position, token, tx.now)
	if err != nil {
		return fmt.Errorf("set checkpoint %q: %w", name, mapErr(err))
	}
	return nil
}

// Checkpoints lists every checkpoint by name.
func (p *Projections) Checkpoints(ctx context.Context) (map[string]int64, error) {
	s := p.s
	rows, err := s.rdb.QueryContext(ctx, `SELECT name, position FROM checkpoints`)
	if err != nil {
		return nil, mapErr(err)
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
	return out, mapErr(rows.Err())
}
