package sqlitedriver

import (
	"context"
	"database/sql"
	"errors"

	"github.com/eventlite/eventlite/store/internal/driver"
)

// ConsumerVersion reads the row; the store's write lock holds it.
func (Exec) ConsumerVersion(ctx context.Context, q driver.Querier, k driver.AggregateKey) (int64, string, bool, error) {
	var version int64
	var eventID string
	err := q.QueryRowContext(ctx, `SELECT version, event_id FROM consumer_versions WHERE consumer = ? AND tenant = ? AND subject = ?`,
		k.Consumer, k.Tenant, k.Subject).Scan(&version, &eventID)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, "", false, nil
	}
	return version, eventID, err == nil, err
}
