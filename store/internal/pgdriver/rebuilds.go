package pgdriver

import (
	"context"

	"github.com/eventlite/eventlite/store/internal/driver"
)

// CountEventsBetween counts a range of the primary key's index, of the
// given types only when types is not empty.
func (Exec) CountEventsBetween(ctx context.Context, q driver.ReadQuerier, after, upto int64, types []string) (int64, error) {
	query := `SELECT count(*) FROM events WHERE position > $1 AND position <= $2`
	args := []any{after, upto}
	if len(types) > 0 {
		query += ` AND type = ANY($3)`
		args = append(args, types)
	}
	var n int64
	err := q.QueryRowContext(ctx, query, args...).Scan(&n)
	return n, err
}
