package pgdriver

import "context"

// SealedUnder reads erasure_keys on the writer's connection, inside its
// transaction, then records the stream in erasure_streams. Under READ
// COMMITTED the statement sees every forget committed before it started;
// a forget runs under the log_head row lock that Begin takes too, so
// none commits between this check and the append's commit.
func (w *writer) SealedUnder(ctx context.Context, tenant, stream, subject string) (bool, error) {
	var live bool
	if err := w.conn.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM erasure_keys
		WHERE tenant = $1 AND subject = $2 AND forgotten_at IS NULL AND wrapped_key IS NOT NULL)`, tenant, subject).Scan(&live); err != nil || !live {
		return false, err
	}
	_, err := w.conn.ExecContext(ctx, `INSERT INTO erasure_streams (tenant, subject, stream_id) VALUES ($1, $2, $3)
		ON CONFLICT DO NOTHING`, tenant, subject, stream)
	return err == nil, err
}
