package sqlitedriver

import "context"

// KeyLive reads erasure_keys on the writer's connection, inside its
// transaction, by the table's primary key. It is never answered from the
// stream-state cache: a forget committed by another process is seen
// whatever the cache and the data version say.
func (w *writer) KeyLive(ctx context.Context, tenant, subject string) (bool, error) {
	var live bool
	err := w.conn.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM erasure_keys
		WHERE tenant = ? AND subject = ? AND forgotten_at IS NULL AND wrapped_key IS NOT NULL)`, tenant, subject).Scan(&live)
	return live, err
}
