package sqlshared

import (
	"context"
	"database/sql"
	"errors"

	"github.com/eventlite/eventlite/store/internal/driver"
)

// SealedUnder reads the subject's erasure_keys row on q, the writer's
// connection inside its transaction, by the table's primary key: live
// when its key is wrapped, forgotten when it was forgotten. A live key
// records the stream in erasure_streams. d is the driver's dialect.
func SealedUnder(ctx context.Context, q driver.Querier, d Dialect, tenant, stream, subject string, wrapped []byte) (live, forgotten bool, err error) {
	err = q.QueryRowContext(ctx, d.Bind(`SELECT forgotten_at IS NOT NULL, COALESCE(wrapped_key = ?, false) FROM erasure_keys
		WHERE tenant = ? AND subject = ?`), wrapped, tenant, subject).Scan(&forgotten, &live)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return false, false, nil
	case err != nil || !live || forgotten:
		return false, forgotten, err
	}
	_, err = q.ExecContext(ctx, d.Bind(`INSERT INTO erasure_streams (tenant, subject, stream_id) VALUES (?, ?, ?)
		ON CONFLICT DO NOTHING`), tenant, subject, stream)
	return err == nil, false, err
}
