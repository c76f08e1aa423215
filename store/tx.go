package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// Tx is a write transaction on the store's writer, handed to an Update
// closure. A projection runs its own SQL for its own tables through it;
// tx.Append appends events in it. It is valid only inside the closure.
//
// Operations that only make sense inside a write transaction are methods
// of Tx (tx.Append, tx.SetCheckpoint, tx.CheckFence, tx.TableExists...),
// not Store methods taking a Tx: the Tx knows its store.
//
// The ctx given to its methods is checked before each statement: once it has ended the statement
// does not run and its error is returned. It never interrupts a
// statement of a transaction that other requests share (a statement
// already running completes); a request alone in its transaction runs
// under its Update's ctx, which may interrupt it.
type Tx struct {
	s    *Store
	now  int64 // unix nanoseconds at the start of the transaction
	done bool
}

var (
	errTxDone   = errors.New("store: Tx used outside its Update closure")
	errTxClosed = fmt.Errorf("store: Tx used outside its Update closure, on a closed store: %w", ErrClosed)
)

func (tx *Tx) check() error {
	if tx == nil {
		return errTxDone
	}
	if tx.done {
		if tx.s.rdb.check() != nil {
			return errTxClosed
		}
		return errTxDone
	}
	return nil
}

// ExecContext runs a statement in the transaction.
func (tx *Tx) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if err := tx.check(); err != nil {
		return nil, err
	}
	res, err := tx.s.wconn.ExecContext(ctx, query, args...)
	return res, mapErr(err)
}

// QueryContext runs a query in the transaction; it sees the transaction's
// own writes. Close the rows before the closure returns.
func (tx *Tx) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if err := tx.check(); err != nil {
		return nil, err
	}
	rows, err := tx.s.wconn.QueryContext(ctx, query, args...)
	return rows, mapErr(err)
}

// QueryRowContext runs a query that returns at most one row.
func (tx *Tx) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	if err := tx.check(); err != nil {
		return errRow(err)
	}
	return tx.s.wconn.QueryRowContext(ctx, query, args...)
}

// Update runs fn on the writer, atomically: fn's writes commit when it
// returns nil and are undone when it returns an error or panics (the panic
// is re-raised here). When ctx ends before fn returns, fn's writes are
// undone too and Update returns ctx's error, even if fn returned nil: nil
// means stored, an error means nothing was. A ctx that ends before the
// writer takes fn keeps fn from running. Closures and appends sent at the
// same time may share one immediate transaction, each under its own
// savepoint, so that one fsync serves them all; a closure sees the writes
// of those before it, as it would in separate transactions. The transaction holds the write lock
// from its start, so reading then writing never fails with BUSY. Keep fn
// short: it holds the writer, and every append waits for it. Do not call
// Update or Append from inside fn (use tx.Append): that deadlocks.
func (s *Store) Update(ctx context.Context, fn func(*Tx) error) error {
	r := &request{ctx: ctx, fn: fn, done: make(chan struct{})}
	return s.submit(ctx, r)
}
