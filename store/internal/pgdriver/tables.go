package pgdriver

import (
	"context"

	"github.com/eventlite/eventlite/store/internal/driver"
)

// QueryOnly makes the session's transactions read-only
// (default_transaction_read_only), or resets the setting to what the
// session started with: a store opened read-only stays read-only.
func (Exec) QueryOnly(ctx context.Context, q driver.Querier, on bool) error {
	query := `RESET default_transaction_read_only`
	if on {
		query = `SET default_transaction_read_only = on`
	}
	_, err := q.ExecContext(ctx, query)
	return err
}
