package sqlitedriver

import (
	"context"
	"database/sql"
	"errors"
	"strings"

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
