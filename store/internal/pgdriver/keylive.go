package pgdriver

import "context"

// KeyLive reads erasure_keys on the writer's connection, inside its
// transaction. Under READ COMMITTED the statement sees every forget
// committed before it started; a forget runs under the log_head row lock
// that Begin takes too, so none commits between this check and the
// append's commit.
func (w *writer) KeyLive(ctx context.Context, tenant, subject string) (bool, error) {
	var live bool
	err := w.conn.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM erasure_keys
		WHERE tenant = $1 AND subject = $2 AND forgotten_at IS NULL AND wrapped_key IS NOT NULL)`, tenant, subject).Scan(&live)
	return live, err
}
