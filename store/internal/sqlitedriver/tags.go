package sqlitedriver

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"sync"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/store/internal/driver"
)

// tagChunk is the most tag rows one INSERT writes.
const tagChunk = 96

// insertTagsSQL inserts k rows of event_tags.
func insertTagsSQL(k int) string {
	return "INSERT INTO event_tags (tenant, tag, position) VALUES (?, ?, ?)" +
		strings.Repeat(", (?, ?, ?)", k-1) + " ON CONFLICT DO NOTHING"
}

// tagWriter keeps the statements of the tag index on the writer's
// connection: the inserts by row count, and the conditions' reads by
// their SQL (a decision runs the same few queries again and again).
type tagWriter struct {
	inserts map[int]*sql.Stmt
	matches map[string]*sql.Stmt
}

// maxMatchStmts bounds the prepared condition reads kept.
const maxMatchStmts = 64

func (t *tagWriter) close() []error {
	var errs []error
	for _, st := range t.inserts {
		errs = append(errs, st.Close())
	}
	for _, st := range t.matches {
		errs = append(errs, st.Close())
	}
	t.inserts, t.matches = nil, nil
	return errs
}

// insertTags writes the tag rows of b's events.
func (w *writer) insertTags(ctx context.Context, b driver.EventBatch) error {
	if !driver.BatchHasTags(b.Events) {
		return nil
	}
	var args []any
	flush := func() error {
		k := len(args) / 3
		st := w.tags.inserts[k]
		if st == nil {
			var err error
			if st, err = w.conn.PrepareContext(ctx, insertTagsSQL(k)); err != nil {
				return err
			}
			if w.tags.inserts == nil {
				w.tags.inserts = make(map[int]*sql.Stmt)
			}
			w.tags.inserts[k] = st
		}
		_, err := st.ExecContext(ctx, args...)
		args = args[:0]
		return err
	}
	var err error
	driver.TagRows(b, func(pos int64, tag string) {
		if err != nil {
			return
		}
		args = append(args, b.Tenant, tag, pos)
		if len(args) == 3*tagChunk {
			err = flush()
		}
	})
	if err == nil && len(args) > 0 {
		err = flush()
	}
	if err != nil {
		return &driver.OpError{Op: "insert tags", Err: err}
	}
	return nil
}

// FirstMatch runs FirstMatchSQL on the writer's connection, inside the
// write transaction.
func (w *writer) FirstMatch(ctx context.Context, tenant string, q *driver.Query, after int64) (driver.Match, bool, error) {
	query, args := driver.FirstMatchSQL(false, tenant, q, after)
	st := w.tags.matches[query]
	if st == nil {
		var err error
		if st, err = w.conn.PrepareContext(ctx, query); err != nil {
			return driver.Match{}, false, err
		}
		if len(w.tags.matches) >= maxMatchStmts {
			for k, old := range w.tags.matches {
				_ = old.Close()
				delete(w.tags.matches, k)
			}
		}
		if w.tags.matches == nil {
			w.tags.matches = make(map[string]*sql.Stmt)
		}
		w.tags.matches[query] = st
	}
	var m driver.Match
	err := st.QueryRowContext(ctx, args...).Scan(&m.Position, &m.ID)
	if errors.Is(err, sql.ErrNoRows) {
		return driver.Match{}, false, nil
	}
	if err != nil {
		return driver.Match{}, false, err
	}
	return m, true, nil
}

// EachEventTags reads the tags extension out of attrs' extensions.
func (x Exec) EachEventTags(ctx context.Context, q driver.ReadQuerier, fn func(tenant string, position int64, value string) error) error {
	if ok, err := x.TableExists(ctx, q, "event_tags"); err != nil || !ok {
		return err
	}
	rows, err := q.QueryContext(ctx, `SELECT tenant, position, json_extract(x, '$.`+envelope.ExtTags+`') FROM (
		SELECT tenant, position, `+ExtensionsSQL+` AS x FROM events WHERE attrs IS NOT NULL)
		WHERE x IS NOT NULL AND json_valid(x) AND json_type(x, '$.`+envelope.ExtTags+`') = 'text' ORDER BY position`)
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

// EraseSubjectTags rewrites the attrs of the subject's tagged events
// without the tags and deletes their index rows (a file older than the
// index, as a restore may reapply forgets to, has none: the extension
// is stripped all the same, so its migration indexes nothing of them).
func (x Exec) EraseSubjectTags(ctx context.Context, q driver.Querier, tenant, subject string) (int64, error) {
	indexed, err := x.TableExists(ctx, q, "event_tags")
	if err != nil {
		return 0, err
	}
	rows, err := q.QueryContext(ctx, `SELECT position, attrs FROM events
		WHERE tenant = ?1 AND attrs IS NOT NULL AND json_extract(`+ExtensionsSQL+`, '$.erasurekey') = ?2
		AND json_extract(`+ExtensionsSQL+`, '$.`+envelope.ExtTags+`') IS NOT NULL`, tenant, subject)
	if err != nil {
		return 0, err
	}
	type change struct {
		pos   int64
		attrs []byte
		tags  []string
	}
	var changes []change
	for rows.Next() {
		var c change
		var attrs []byte
		if err := rows.Scan(&c.pos, &attrs); err != nil {
			rows.Close()
			return 0, err
		}
		f, err := attrFields(string(attrs))
		if err != nil {
			rows.Close()
			return 0, err
		}
		ext, tags, ok, err := driver.StripTags([]byte(f[3]))
		if err != nil || !ok {
			continue // not JSON, or no tags: nothing to erase
		}
		c.tags = tags
		if f[0] != "" || f[1] != "" || f[2] != "" || len(ext) > 0 {
			c.attrs = append([]byte(f[0]+"\x00"+f[1]+"\x00"+f[2]+"\x00"), ext...)
		}
		changes = append(changes, c)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, err
	}
	for _, c := range changes {
		var attrs any
		if c.attrs != nil {
			attrs = c.attrs
		}
		if _, err := q.ExecContext(ctx, `UPDATE events SET attrs = ? WHERE position = ?`, attrs, c.pos); err != nil {
			return 0, err
		}
		for _, tag := range c.tags {
			if !indexed {
				break
			}
			if _, err := q.ExecContext(ctx, `DELETE FROM event_tags WHERE tenant = ? AND tag = ? AND position = ?`, tenant, tag, c.pos); err != nil {
				return 0, err
			}
		}
	}
	return int64(len(changes)), nil
}

// maxQueryStmts bounds the prepared reads by query a reader keeps.
const maxQueryStmts = 64

// stmtCache keeps statements prepared on a pool, by their SQL, at most
// maxQueryStmts; a statement is never closed while the reader is open
// (another read may be running on it), so past the bound a query runs
// unprepared.
type stmtCache struct {
	mu    sync.Mutex
	stmts map[string]*sql.Stmt
}

// query runs q with args, on its prepared statement when the cache holds
// or takes one.
func (c *stmtCache) query(ctx context.Context, db *sql.DB, q string, args ...any) (*sql.Rows, error) {
	c.mu.Lock()
	st := c.stmts[q]
	if st == nil && len(c.stmts) < maxQueryStmts {
		var err error
		if st, err = db.PrepareContext(ctx, q); err != nil {
			c.mu.Unlock()
			return nil, err
		}
		if c.stmts == nil {
			c.stmts = make(map[string]*sql.Stmt)
		}
		c.stmts[q] = st
	}
	c.mu.Unlock()
	if st == nil {
		return db.QueryContext(ctx, q, args...)
	}
	return st.QueryContext(ctx, args...)
}

func (c *stmtCache) close() []error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var errs []error
	for _, st := range c.stmts {
		errs = append(errs, st.Close())
	}
	c.stmts = nil
	return errs
}
