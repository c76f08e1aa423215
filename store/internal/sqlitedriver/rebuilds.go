package sqlitedriver

import (
	"context"
	"strings"

	"github.com/eventlite/eventlite/store/internal/driver"
)

// CountEventsBetween counts a range of the log; without types, when the
// range is most of the log, it counts the whole and takes away the rest.
func (Exec) CountEventsBetween(ctx context.Context, q driver.ReadQuerier, after, upto int64, types []string) (int64, error) {
	query := `SELECT count(*) FROM events WHERE position > ? AND position <= ?`
	args := []any{after, upto}
	if len(types) == 0 {
		// Counting a range walks the table's pages; counting the whole
		// table reads an index a tenth of its size. Most of the log:
		// count the whole and take away the rest.
		query = `SELECT CASE WHEN ?2 - ?1 > (SELECT COALESCE(MAX(position), 0) FROM events) / 2
			THEN (SELECT count(*) FROM events) - (SELECT count(*) FROM events WHERE position <= ?1)
				- (SELECT count(*) FROM events WHERE position > ?2)
			ELSE (SELECT count(*) FROM events WHERE position > ?1 AND position <= ?2) END`
	} else {
		query += ` AND type IN (?` + strings.Repeat(", ?", len(types)-1) + `)`
		for _, t := range types {
			args = append(args, t)
		}
	}
	var n int64
	err := q.QueryRowContext(ctx, query, args...).Scan(&n)
	return n, err
}
