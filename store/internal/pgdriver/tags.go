package pgdriver

import (
	"context"
	"database/sql"
	"errors"

	"github.com/eventlite/eventlite/store/internal/driver"
)

// InsertTagsSQL writes a batch's tag rows in one statement: the tags and
// their positions come as two arrays.
const InsertTagsSQL = `INSERT INTO event_tags (tenant, tag, position)
	SELECT $1::text, u.tag, u.position FROM unnest($2::text[], $3::bigint[]) AS u (tag, position)
	ON CONFLICT DO NOTHING`

// insertTags writes the tag rows of b's events.
func (w *writer) insertTags(ctx context.Context, b driver.EventBatch) error {
	if !driver.BatchHasTags(b.Events) {
		return nil
	}
	var tags []string
	var positions []int64
	driver.TagRows(b, func(pos int64, tag string) {
		tags = append(tags, tag)
		positions = append(positions, pos)
	})
	if w.insertTagRows == nil {
		st, err := w.conn.PrepareContext(ctx, InsertTagsSQL)
		if err != nil {
			return &driver.OpError{Op: "insert tags", Err: err}
		}
		w.insertTagRows = st
	}
	if _, err := w.insertTagRows.ExecContext(ctx, b.Tenant, tags, positions); err != nil {
		return &driver.OpError{Op: "insert tags", Err: err}
	}
	return nil
}

// FirstMatch runs FirstMatchSQL inside the write transaction, after the
// deferred transaction control.
func (w *writer) FirstMatch(ctx context.Context, tenant string, q *driver.Query, after int64) (driver.Match, bool, error) {
	if err := w.flush(ctx); err != nil {
		return driver.Match{}, false, err
	}
	query, args := driver.FirstMatchSQL(true, tenant, q, after)
	var m driver.Match
	err := w.conn.QueryRowContext(ctx, query, args...).Scan(&m.Position, &m.ID)
	if errors.Is(err, sql.ErrNoRows) {
		return driver.Match{}, false, nil
	}
	if err != nil {
		return driver.Match{}, false, err
	}
	return m, true, nil
}
