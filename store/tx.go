package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"github.com/eventlite/eventlite/store/internal/driver"
)

// Tx is a write transaction on the store's writer, handed to an Update
// closure; it is valid only inside it. It offers what a handler or a
// closure does there: its SQL (? placeholders on every engine), Nested,
// Dialect, TableExists, Append and SaveSnapshot. The store's bookkeeping
// is not on it. A ctx that ended stops the next statement, never one of a
// transaction shared with others. docs/handler-sql.md has the rest.
type Tx struct {
	s     *Store
	now   int64 // unix nanoseconds at the start of the transaction
	done  bool
	depth int // open Nested scopes
	// broken: a Nested scope could not be undone or ended; every later
	// statement fails with it, and so does the Update.
	broken error
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
	return tx.broken
}

// ExecContext runs a statement in the transaction. Its placeholders may
// be ? on every engine: on PostgreSQL each ? outside string constants,
// quoted identifiers, comments and dollar quotes is sent as $1..$n in
// order. A query that holds a $n is sent as written (so that jsonb's ?,
// ?| and ?& operators can be used there); in a query without $n, ??
// stands for a literal ?. QueryContext and QueryRowContext, and a View's
// ReadTx, do the same.
//
// A statement the engine refuses as text (a syntax error, an ambiguous or
// unknown column: usually SQL written for the other engine) fails with an
// error naming the engine and the statement's first line and pointing to
// docs/handler-sql.md; errors.As still reaches the engine's own error.
func (tx *Tx) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	sent := tx.rebind(query)
	var res sql.Result
	var err error
	if cerr := tx.callerSQL(sent, func() { res, err = tx.s.wconn.ExecContext(ctx, sent, args...) }); cerr != nil {
		return nil, cerr
	}
	return res, statementError(tx.s.ex.Dialect(), query, err)
}

// QueryContext runs a query in the transaction; it sees the transaction's
// own writes. Close the rows before the closure returns.
func (tx *Tx) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	sent := tx.rebind(query)
	var rows *sql.Rows
	var err error
	if cerr := tx.callerSQL(sent, func() { rows, err = tx.s.wconn.QueryContext(ctx, sent, args...) }); cerr != nil {
		if rows != nil {
			_ = rows.Close()
		}
		return nil, cerr
	}
	return rows, statementError(tx.s.ex.Dialect(), query, err)
}

// QueryRowContext runs a query that returns at most one row.
func (tx *Tx) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	sent := tx.rebind(query)
	var row *sql.Row
	if cerr := tx.callerSQL(sent, func() { row = tx.s.wconn.QueryRowContext(ctx, sent, args...) }); cerr != nil {
		return errRow(cerr)
	}
	if err := row.Err(); classify(err) == driver.Statement {
		return errRow(statementError(tx.s.ex.Dialect(), query, err))
	}
	return row
}

// callerSQL runs a caller's statement (run) with the engine's check of
// transaction control on (driver.Writer.CallerSQL), turned off again
// whatever run does, a panic included, so that the store's own
// statements never run under it. It returns what was refused.
func (tx *Tx) callerSQL(query string, run func()) (err error) {
	if err := tx.check(); err != nil {
		return err
	}
	if refused := tx.s.stmts.CallerSQL(query); refused != "" {
		return txControlError(refused)
	}
	defer func() {
		if refused := tx.s.stmts.CallerSQLDone(); refused != "" {
			err = txControlError(refused)
		}
	}()
	run()
	return nil
}

// txControlError says why a caller's statement was refused: it is the
// store's to begin and end the transaction and its savepoints.
func txControlError(stmt string) error {
	return fmt.Errorf("store: %w: %s refused, not run: the store begins and ends the transaction, which appends and closures sent together share; return an error from the closure to undo its writes, or use tx.Nested for a scope that can be undone alone", ErrTxControl, stmt)
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
// Update or Append from inside fn (use tx.Append): that deadlocks. The
// transaction is the store's: fn does not begin, commit or roll it back,
// or run savepoints of its own (the store refuses them: ErrTxControl); it
// returns an error to undo its writes and uses tx.Nested for a scope.
func (s *Store) Update(ctx context.Context, fn func(*Tx) error) error {
	r := &request{ctx: ctx, fn: func(tx *Tx) error {
		if err := fn(tx); err != nil {
			return err
		}
		// A scope of fn that could not be undone must not commit.
		return tx.broken
	}, done: make(chan struct{})}
	return s.submit(ctx, r)
}

// Nested runs fn as a scope of the transaction: when fn returns an error
// or panics, the writes fn made are undone, those made before it are
// kept, and the transaction stays usable; Nested then returns fn's error
// unchanged (a panic is re-raised once the writes are undone). When fn
// returns nil its writes stay, to commit or roll back with the
// transaction. Scopes nest. A projection runner applies each event in a
// scope of its own, so a handler's failure undoes that event's writes
// and nothing else.
//
// The store names the scope itself, so no caller's text reaches the SQL.
// Should the store fail to undo or end the scope, the transaction is
// broken: Nested returns that error with fn's, every later statement of
// the transaction fails with it and Update returns it: nothing commits.
func (tx *Tx) Nested(ctx context.Context, fn func() error) (err error) {
	if err := tx.check(); err != nil {
		return err
	}
	sp := tx.s.ex.Scope(tx.depth + 1)
	if _, err := tx.s.wconn.ExecContext(ctx, sp.Open); err != nil {
		return fmt.Errorf("store: open a nested scope: %w", mapErr(err))
	}
	tx.depth++
	defer func() {
		if p := recover(); p != nil {
			_ = tx.endScope(ctx, sp, true)
			panic(p)
		}
	}()
	if ferr := fn(); ferr != nil {
		if err := tx.endScope(ctx, sp, true); err != nil {
			return errors.Join(ferr, err)
		}
		return ferr
	}
	return tx.endScope(ctx, sp, false)
}

// endScope ends the innermost Nested scope, undoing its writes first when
// undo is set. It runs even when ctx has ended: a scope left open would
// keep fn's writes. A failure breaks the transaction.
func (tx *Tx) endScope(ctx context.Context, sp driver.ScopeSQL, undo bool) error {
	tx.depth--
	if tx.broken != nil {
		return tx.broken
	}
	end := context.WithoutCancel(ctx)
	if undo {
		if _, err := tx.s.wconn.ExecContext(end, sp.Rollback); err != nil {
			tx.broken = fmt.Errorf("store: undo a nested scope: %w", mapErr(err))
			return tx.broken
		}
	}
	if _, err := tx.s.wconn.ExecContext(end, sp.Release); err != nil {
		tx.broken = fmt.Errorf("store: end a nested scope: %w", mapErr(err))
		return tx.broken
	}
	return nil
}
