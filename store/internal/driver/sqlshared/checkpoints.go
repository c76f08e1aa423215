package sqlshared

import (
	"context"

	"github.com/eventlite/eventlite/store/internal/driver"
)

// Checkpoints reads the table.
func (Exec[D]) Checkpoints(ctx context.Context, q driver.ReadQuerier) (map[string]int64, error) {
	rows, err := q.QueryContext(ctx, `SELECT name, position FROM checkpoints`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var n string
		var p int64
		if err := rows.Scan(&n, &p); err != nil {
			return nil, err
		}
		out[n] = p
	}
	return out, rows.Err()
}
