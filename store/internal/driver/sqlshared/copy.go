package sqlshared

import (
	"context"
	"strings"

	"github.com/eventlite/eventlite/store/internal/driver"
)

// A copy's reads of its source (driver.CopySource). What a target does
// with the rows is PostgreSQL's own (pgdriver's CopyInsert).

// CopyRows reads every row of table in the order of order, each column
// through Dialect.CopyColumn.
func (x Exec[D]) CopyRows(ctx context.Context, q driver.ReadQuerier, table string, cols, order []string, fn func(row []any) error) error {
	d := x.dialect()
	sel := make([]string, len(cols))
	for i, c := range cols {
		sel[i] = d.CopyColumn(table, c)
	}
	query := `SELECT ` + strings.Join(sel, ", ") + ` FROM ` + d.QuoteIdent(table)
	if len(order) > 0 {
		query += ` ORDER BY ` + x.QuoteList(order)
	}
	rows, err := q.QueryContext(ctx, query)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		row := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range row {
			ptrs[i] = &row[i]
		}
		// Scanning into *any copies a []byte, so fn may keep it.
		if err := rows.Scan(ptrs...); err != nil {
			return err
		}
		if err := fn(row); err != nil {
			return err
		}
	}
	return rows.Err()
}

// QuoteList quotes each name and joins them with commas.
func (x Exec[D]) QuoteList(names []string) string {
	d := x.dialect()
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = d.QuoteIdent(n)
	}
	return strings.Join(q, ", ")
}

// CopyCount counts table's rows.
func (x Exec[D]) CopyCount(ctx context.Context, q driver.ReadQuerier, table string) (int64, error) {
	return x.CountRows(ctx, q, table)
}

// CopyLiveLeases lists the leases whose owner is set and whose expiry is
// after the engine's clock, the clock AcquireLease compares with.
func (x Exec[D]) CopyLiveLeases(ctx context.Context, q driver.ReadQuerier) ([]driver.LiveLease, error) {
	rows, err := q.QueryContext(ctx, `SELECT resource, owner, expires_at FROM leases
		WHERE owner <> '' AND expires_at > `+x.dialect().NowMillis()+` ORDER BY resource`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []driver.LiveLease
	for rows.Next() {
		var l driver.LiveLease
		if err := rows.Scan(&l.Resource, &l.Owner, &l.ExpiresAt); err != nil {
			return nil, err
		}
		out = append(out, l)
	}
	return out, rows.Err()
}
