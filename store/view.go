package store

import (
	"context"
	"database/sql"
	sqldriver "database/sql/driver"
	"errors"
	"fmt"
	"github.com/eventlite/eventlite/store/internal/driver"
)

// ReadTx is a read-only snapshot of the database on the read pool, handed
// to a View closure: every query in it sees the same committed state,
// whatever commits meanwhile. Read-model readers use it to query a
// projection's tables. It is valid only inside the closure.
type ReadTx struct {
	tx   *sql.Tx
	ex   driver.Executor
	done bool
}

var errReadTxDone = errors.New("store: ReadTx used outside its View closure")

// QueryContext runs a query in the snapshot; its placeholders are ? on
// every engine, as in Tx.ExecContext. Close the rows before the
// closure returns.
func (r *ReadTx) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if r == nil || r.done {
		return nil, errReadTxDone
	}
	rows, err := r.tx.QueryContext(ctx, r.ex.Rebind(query), args...)
	return rows, statementError(r.ex.Dialect(), query, err)
}

// QueryRowContext runs a query that returns at most one row.
func (r *ReadTx) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	row := r.tx.QueryRowContext(ctx, r.ex.Rebind(query), args...)
	if err := row.Err(); classify(err) == driver.Statement {
		return errRow(statementError(r.ex.Dialect(), query, err))
	}
	return row
}

// TableExists reports whether a table of that exact name exists in the
// snapshot.
func (r *ReadTx) TableExists(ctx context.Context, name string) (bool, error) {
	if r == nil || r.done {
		return false, errReadTxDone
	}
	ok, err := r.ex.TableExists(ctx, r.tx, name)
	return ok, mapErr(err)
}

// View runs fn in a read transaction on the read pool: one snapshot for
// all of fn's queries, without the writer, so reads never wait for writes
// nor hold them up. The connection is query-only while fn runs: a write
// fails. Keep fn short: an open snapshot keeps the WAL from being
// checkpointed past it.
func (s *Store) View(ctx context.Context, fn func(*ReadTx) error) (err error) {
	c, err := s.rdb.Conn(ctx)
	if err != nil {
		return fmt.Errorf("view: %w", mapErr(err))
	}
	defer c.Close()
	if err := s.ex.QueryOnly(ctx, c, true); err != nil {
		return fmt.Errorf("view: %w", mapErr(err))
	}
	defer func() {
		// The pool's connections only ever read, but leave this one as
		// it was found.
		if rerr := s.ex.QueryOnly(context.Background(), c, false); rerr != nil {
			_ = c.Raw(func(any) error { return sqldriver.ErrBadConn }) // the pool drops it
		}
	}()
	tx, err := c.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return fmt.Errorf("view: %w", mapErr(err))
	}
	r := &ReadTx{tx: tx, ex: s.ex}
	defer func() {
		r.done = true
		_ = tx.Rollback() // a read transaction has nothing to commit
	}()
	// A deferred transaction takes its snapshot at its first read: read
	// once now, so every query of fn sees the same state.
	if err := s.ex.StartSnapshot(ctx, tx); err != nil {
		return fmt.Errorf("view: %w", mapErr(err))
	}
	return fn(r)
}
