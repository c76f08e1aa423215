package sqlshared

import (
	"context"

	"github.com/eventlite/eventlite/store/internal/driver"
)

// Taking, renewing and checking a lease are each engine's own (SQLite
// decides under its write lock, PostgreSQL under a row lock); releasing
// and listing are alike.

// ReleaseLease clears the owner when the fence still matches.
func (x Exec[D]) ReleaseLease(ctx context.Context, q driver.Querier, f driver.Fence) error {
	_, err := q.ExecContext(ctx, x.bind(`UPDATE leases SET owner = '', expires_at = 0 WHERE resource = ? AND owner = ? AND token = ?`),
		f.Resource, f.Owner, f.Token)
	return err
}

// ListLeases reads the table, judging expiry by the engine's clock.
func (x Exec[D]) ListLeases(ctx context.Context, q driver.ReadQuerier) ([]driver.LeaseRow, error) {
	rows, err := q.QueryContext(ctx, `SELECT resource, owner, token, expires_at, acquired_at, expires_at <= `+x.dialect().NowMillis()+` FROM leases ORDER BY resource`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []driver.LeaseRow
	for rows.Next() {
		var l driver.LeaseRow
		if err := rows.Scan(&l.Resource, &l.Owner, &l.Token, &l.ExpiresAt, &l.AcquiredAt, &l.Expired); err != nil {
			return nil, err
		}
		out = append(out, l)
	}
	return out, rows.Err()
}
