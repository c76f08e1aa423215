package pgdriver

import (
	"context"
	"database/sql"
	"errors"
)

// SealedUnder reads erasure_keys on the writer's connection, inside its
// transaction, then records the stream in erasure_streams. Under READ
// COMMITTED the statement sees every forget committed before it started;
// a forget runs under the log_head row lock that Begin takes too, so
// none commits between this check and the append's commit.
func (w *writer) SealedUnder(ctx context.Context, tenant, stream, subject string, wrapped []byte) (live, forgotten bool, err error) {
	err = w.conn.QueryRowContext(ctx, `SELECT forgotten_at IS NOT NULL, COALESCE(wrapped_key = $1, false) FROM erasure_keys
		WHERE tenant = $2 AND subject = $3`, wrapped, tenant, subject).Scan(&forgotten, &live)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return false, false, nil
	case err != nil || !live || forgotten:
		return false, forgotten, err
	}
	_, err = w.conn.ExecContext(ctx, `INSERT INTO erasure_streams (tenant, subject, stream_id) VALUES ($1, $2, $3)
		ON CONFLICT DO NOTHING`, tenant, subject, stream)
	return err == nil, false, err
}
