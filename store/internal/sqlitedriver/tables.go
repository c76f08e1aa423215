package sqlitedriver

import (
	"context"

	"github.com/eventlite/eventlite/store/internal/driver"
)

// QueryOnly sets PRAGMA query_only.
func (Exec) QueryOnly(ctx context.Context, q driver.Querier, on bool) error {
	query := `PRAGMA query_only = 0`
	if on {
		query = `PRAGMA query_only = 1`
	}
	_, err := q.ExecContext(ctx, query)
	return err
}
