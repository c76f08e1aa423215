package pgdriver

import (
	"context"
	"database/sql"
	"errors"

	"github.com/eventlite/eventlite/envelope"
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

// EachEventTags reads the tags extension out of the extensions column.
func (x Exec) EachEventTags(ctx context.Context, q driver.ReadQuerier, fn func(tenant string, position int64, value string) error) error {
	if ok, err := x.TableExists(ctx, q, "event_tags"); err != nil || !ok {
		return err
	}
	rows, err := q.QueryContext(ctx, `SELECT tenant, position, extensions::json ->> '`+envelope.ExtTags+`' FROM events
		WHERE extensions IS NOT NULL AND json_typeof(extensions::json -> '`+envelope.ExtTags+`') = 'string' ORDER BY position`)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var tenant, v string
		var pos int64
		if err := rows.Scan(&tenant, &pos, &v); err != nil {
			return err
		}
		if err := fn(tenant, pos, v); err != nil {
			return err
		}
	}
	return rows.Err()
}

// EraseSubjectTags rewrites the extensions of the subject's tagged
// events without the tags and deletes their index rows.
func (Exec) EraseSubjectTags(ctx context.Context, q driver.Querier, tenant, subject string) (int64, error) {
	rows, err := q.QueryContext(ctx, `SELECT e.position, e.extensions FROM events e
		WHERE e.tenant = $1 AND e.extensions IS NOT NULL AND `+erasureKeyOf+` = $2
		AND (e.extensions::json ->> '`+envelope.ExtTags+`') IS NOT NULL FOR UPDATE`, tenant, subject)
	if err != nil {
		return 0, err
	}
	type change struct {
		pos  int64
		ext  []byte
		tags []string
	}
	var changes []change
	for rows.Next() {
		var c change
		var ext string
		if err := rows.Scan(&c.pos, &ext); err != nil {
			rows.Close()
			return 0, err
		}
		out, tags, ok, err := driver.StripTags([]byte(ext))
		if err != nil || !ok {
			continue
		}
		c.ext, c.tags = out, tags
		changes = append(changes, c)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, err
	}
	for _, c := range changes {
		var ext any
		if c.ext != nil {
			ext = string(c.ext)
		}
		if _, err := q.ExecContext(ctx, `UPDATE events SET extensions = $1 WHERE position = $2`, ext, c.pos); err != nil {
			return 0, err
		}
		if len(c.tags) > 0 {
			if _, err := q.ExecContext(ctx, `DELETE FROM event_tags WHERE tenant = $1 AND position = $2 AND tag = ANY($3::text[])`, tenant, c.pos, c.tags); err != nil {
				return 0, err
			}
		}
	}
	return int64(len(changes)), nil
}
