package sqlitedriver

import (
	"context"
	"database/sql"
	"errors"
)

// SealedUnder reads erasure_keys on the writer's connection, inside its
// transaction, by the table's primary key, then records the stream in
// erasure_streams. It is never answered from the stream-state cache: a
// forget committed by another process is seen whatever the cache and
// the data version say.
func (w *writer) SealedUnder(ctx context.Context, tenant, stream, subject string, wrapped []byte) (live, forgotten bool, err error) {
	err = w.conn.QueryRowContext(ctx, `SELECT forgotten_at IS NOT NULL, COALESCE(wrapped_key = ?, 0) FROM erasure_keys
		WHERE tenant = ? AND subject = ?`, wrapped, tenant, subject).Scan(&forgotten, &live)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return false, false, nil
	case err != nil || !live || forgotten:
		return false, forgotten, err
	}
	_, err = w.conn.ExecContext(ctx, `INSERT INTO erasure_streams (tenant, subject, stream_id) VALUES (?, ?, ?)
		ON CONFLICT DO NOTHING`, tenant, subject, stream)
	return err == nil, false, err
}
