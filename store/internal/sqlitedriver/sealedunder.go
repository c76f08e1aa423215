package sqlitedriver

import "context"

// SealedUnder reads erasure_keys on the writer's connection, inside its
// transaction, by the table's primary key, then records the stream in
// erasure_streams. It is never answered from the stream-state cache: a
// forget committed by another process is seen whatever the cache and
// the data version say.
func (w *writer) SealedUnder(ctx context.Context, tenant, stream, subject string) (bool, error) {
	var live bool
	if err := w.conn.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM erasure_keys
		WHERE tenant = ? AND subject = ? AND forgotten_at IS NULL AND wrapped_key IS NOT NULL)`, tenant, subject).Scan(&live); err != nil || !live {
		return false, err
	}
	_, err := w.conn.ExecContext(ctx, `INSERT INTO erasure_streams (tenant, subject, stream_id) VALUES (?, ?, ?)
		ON CONFLICT DO NOTHING`, tenant, subject, stream)
	return err == nil, err
}
