package sqlitedriver

import (
	"context"
	"strings"

	"github.com/eventlite/eventlite/store/internal/driver"
)

var _ driver.CopySource = Exec{}

// CopyRows reads every row of table in the order of order. Values come
// as SQLite stored them: a column's declared type is only an affinity,
// and the copy converts what the target's columns need.
//
// The events table keeps dataschema, correlationid, causationid and the
// extensions in one column (attrs): their own columns, which other
// engines have, are read from it.
func (Exec) CopyRows(ctx context.Context, q driver.ReadQuerier, table string, cols, order []string, fn func(row []any) error) error {
	sel := quoteList(cols)
	if table == "events" {
		sel = eventCopyList(cols)
	}
	return copyRows(ctx, q, `SELECT `+sel+` FROM `+QuoteIdent(table)+orderBy(order), len(cols), fn)
}

// CopyColumns is table's shape, with the events' attrs column named as
// the four it joins.
func (x Exec) CopyColumns(ctx context.Context, q driver.ReadQuerier, table string) (driver.TableShape, error) {
	sh, err := x.TableColumns(ctx, q, table)
	if err != nil || table != "events" {
		return sh, err
	}
	var cols []string
	for _, c := range sh.Cols {
		if c == "attrs" {
			cols = append(cols, "data_schema", "correlation_id", "causation_id", "extensions")
			continue
		}
		cols = append(cols, c)
	}
	sh.Cols = cols
	return sh, nil
}

// eventAttrColumns are the columns attrs joins, as SQL over it.
var eventAttrColumns = map[string]string{
	"data_schema":    DataSchemaSQL,
	"correlation_id": CorrelationIDSQL,
	"causation_id":   CausationIDSQL,
	"extensions":     ExtensionsSQL,
}

// eventCopyList is the select list of cols of events.
func eventCopyList(cols []string) string {
	q := make([]string, len(cols))
	for i, c := range cols {
		if x, ok := eventAttrColumns[c]; ok {
			q[i] = x
		} else {
			q[i] = QuoteIdent(c)
		}
	}
	return strings.Join(q, ", ")
}

// copyRows runs query and calls fn with each row's n values.
func copyRows(ctx context.Context, q driver.ReadQuerier, query string, n int, fn func(row []any) error) error {
	rows, err := q.QueryContext(ctx, query)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		row := make([]any, n)
		ptrs := make([]any, n)
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

// quoteList quotes each name and joins them with commas.
func quoteList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = QuoteIdent(n)
	}
	return strings.Join(q, ", ")
}

// orderBy is the ORDER BY clause of cols, or nothing without any.
func orderBy(cols []string) string {
	if len(cols) == 0 {
		return ""
	}
	return ` ORDER BY ` + quoteList(cols)
}

// CopyCount counts table's rows.
func (x Exec) CopyCount(ctx context.Context, q driver.ReadQuerier, table string) (int64, error) {
	return x.CountRows(ctx, q, table)
}

// CopySequence is the rule of the writer's StreamStateSQL: the highest
// position in the log or the floor a scavenge or restore recorded,
// whichever is higher.
func (Exec) CopySequence(ctx context.Context, q driver.ReadQuerier) (int64, error) {
	var seq int64
	err := q.QueryRowContext(ctx, `SELECT max(COALESCE((SELECT MAX(position) FROM events), 0),
		COALESCE((SELECT position FROM position_floor WHERE one = 1), 0))`).Scan(&seq)
	return seq, err
}

// CopyLiveLeases lists the leases whose owner is set and whose expiry is
// after SQLite's clock, the clock AcquireLease compares with.
func (Exec) CopyLiveLeases(ctx context.Context, q driver.ReadQuerier) ([]driver.LiveLease, error) {
	rows, err := q.QueryContext(ctx, `SELECT resource, owner, expires_at FROM leases
		WHERE owner <> '' AND expires_at > `+nowMillis+` ORDER BY resource`)
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
