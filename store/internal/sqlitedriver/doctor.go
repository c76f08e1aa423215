package sqlitedriver

import (
	"context"

	"github.com/eventlite/eventlite/store/internal/driver"
)

// EachVersionGap groups the events by stream.
func (x Exec) EachVersionGap(ctx context.Context, q driver.ReadQuerier, fn func(tenant, stream string) error) error {
	gaps, err := x.TableExists(ctx, q, "version_gaps")
	if err != nil {
		return err
	}
	query := eachVersionGap
	if gaps {
		// A restore's recorded gaps are no damage.
		query = `SELECT v.tenant, v.stream_id FROM (` + StreamVersionSpans + `) v WHERE ` + StreamVersionGap + `
		UNION SELECT s.tenant, s.stream_id FROM streams s
		WHERE NOT EXISTS (SELECT 1 FROM events e WHERE e.tenant = s.tenant AND e.stream_id = s.stream_id)`
	}
	rows, err := q.QueryContext(ctx, query)
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

// eachVersionGap is EachVersionGap's query in a file without recorded
// version gaps.
const eachVersionGap = `SELECT e.tenant, e.stream_id FROM events e JOIN streams s ON s.tenant = e.tenant AND s.stream_id = e.stream_id
		GROUP BY e.tenant, e.stream_id
		HAVING MAX(e.version) - MIN(e.version) + 1 != count(*) OR (MIN(e.version) != 1 AND MIN(e.version) > MIN(MAX(s.first_version), MAX(e.version)))
		UNION SELECT s.tenant, s.stream_id FROM streams s
		WHERE NOT EXISTS (SELECT 1 FROM events e WHERE e.tenant = s.tenant AND e.stream_id = s.stream_id)`
