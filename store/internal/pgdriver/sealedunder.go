package pgdriver

import (
	"context"

	"github.com/eventlite/eventlite/store/internal/driver/sqlshared"
)

// SealedUnder reads erasure_keys on the writer's connection, inside its
// transaction, then records the stream in erasure_streams. Under READ
// COMMITTED the statement sees every forget committed before it started;
// a forget runs under the log_head row lock that Begin takes too, so
// none commits between this check and the append's commit.
func (w *writer) SealedUnder(ctx context.Context, tenant, stream, subject string, wrapped []byte) (live, forgotten bool, err error) {
	return sqlshared.SealedUnder(ctx, w.conn, dialect{}, tenant, stream, subject, wrapped)
}
