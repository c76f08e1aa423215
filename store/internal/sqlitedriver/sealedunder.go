package sqlitedriver

import (
	"context"

	"github.com/eventlite/eventlite/store/internal/driver/sqlshared"
)

// SealedUnder reads erasure_keys on the writer's connection, inside its
// transaction, by the table's primary key, then records the stream in
// erasure_streams. It is never answered from the stream-state cache: a
// forget committed by another process is seen whatever the cache and
// the data version say.
func (w *writer) SealedUnder(ctx context.Context, tenant, stream, subject string, wrapped []byte) (live, forgotten bool, err error) {
	return sqlshared.SealedUnder(ctx, w.conn, dialect{}, tenant, stream, subject, wrapped)
}
