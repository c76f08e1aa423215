package pgdriver

import (
	"context"

	"github.com/eventlite/eventlite/store/internal/driver"
)

// EachVersionGap groups the events by stream; the streams come in byte
// order, as SQLite's UNION gives them.
func (Exec) EachVersionGap(ctx context.Context, q driver.ReadQuerier, fn func(tenant, stream string) error) error {
	rows, err := q.QueryContext(ctx, `SELECT v.tenant, v.stream_id FROM (`+streamVersionSpans+`) v WHERE `+streamVersionGap+`
		UNION SELECT s.tenant, s.stream_id FROM streams s
		WHERE NOT EXISTS (SELECT 1 FROM events e WHERE e.tenant = s.tenant AND e.stream_id = s.stream_id)
		ORDER BY 1, 2`)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var tenant, stream string
		if err := rows.Scan(&tenant, &stream); err != nil {
			return err
		}
		if err := fn(tenant, stream); err != nil {
			return err
		}
	}
	return rows.Err()
}
