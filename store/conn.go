package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"sync/atomic"
)

// writeConn is the writer's connection. Its statements run under the
// context of the transaction they belong to, never under a caller's: a
// caller's context that ended would make the driver interrupt the
// statement (sqlite3_interrupt), and SQLite then rolls back the whole
// transaction, which the writer shares among the requests of a group.
// Every statement first checks the caller's context and, when it has
// ended, returns its error without running; a statement already running
// completes.
type writeConn struct {
	*sql.Conn
	// stmtCtx is the context statements run under while the writer runs
	// a request: context.Background for a request that shares its
	// transaction, the request's own context for one alone in it (only
	// its own work is interrupted then). Nil outside a request (Open
	// runs its statements under its ctx). Set and read by the goroutine
	// that holds writerState.mu.
	stmtCtx context.Context
}

// ctx returns the context for a statement called with the caller's ctx,
// or ctx's error when it has ended.
func (c *writeConn) ctx(ctx context.Context) (context.Context, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if c.stmtCtx != nil {
		return c.stmtCtx, nil
	}
	return ctx, nil
}

// ExecContext runs a statement on the write connection (see writeConn).
func (c *writeConn) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	sctx, err := c.ctx(ctx)
	if err != nil {
		return nil, err
	}
	return c.Conn.ExecContext(sctx, query, args...)
}

// QueryContext runs a query on the write connection (see writeConn).
func (c *writeConn) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	sctx, err := c.ctx(ctx)
	if err != nil {
		return nil, err
	}
	return c.Conn.QueryContext(sctx, query, args...)
}

// QueryRowContext runs a query on the write connection (see writeConn).
func (c *writeConn) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	sctx, err := c.ctx(ctx)
	if err != nil {
		return errRow(err)
	}
	return c.Conn.QueryRowContext(sctx, query, args...)
}

// PrepareContext prepares a statement on the write connection. Run it
// under the writer's context (c.ctx), never a caller's own: the
// transaction it runs in may be shared.
func (c *writeConn) PrepareContext(ctx context.Context, query string) (*sql.Stmt, error) {
	sctx, err := c.ctx(ctx)
	if err != nil {
		return nil, err
	}
	return c.Conn.PrepareContext(sctx, query)
}

// readPool is the read pool. Once the store is closed, every use of it
// fails with ErrClosed (database/sql would say "sql: database is
// closed", which callers cannot test for).
type readPool struct {
	*sql.DB
	closed atomic.Bool
}

// check returns ErrClosed once the store is closed. Reads through the
// statements prepared on the pool call it first.
func (p *readPool) check() error {
	if p.closed.Load() {
		return ErrClosed
	}
	return nil
}

// QueryContext runs a query on the read pool.
func (p *readPool) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if err := p.check(); err != nil {
		return nil, err
	}
	return p.DB.QueryContext(ctx, query, args...)
}

// QueryRowContext runs a query on the read pool.
func (p *readPool) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	if err := p.check(); err != nil {
		return errRow(err)
	}
	return p.DB.QueryRowContext(ctx, query, args...)
}

// ExecContext runs a statement on the read pool.
func (p *readPool) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if err := p.check(); err != nil {
		return nil, err
	}
	return p.DB.ExecContext(ctx, query, args...)
}

// PrepareContext prepares a statement on the read pool.
func (p *readPool) PrepareContext(ctx context.Context, query string) (*sql.Stmt, error) {
	if err := p.check(); err != nil {
		return nil, err
	}
	return p.DB.PrepareContext(ctx, query)
}

// BeginTx starts a transaction on the read pool.
func (p *readPool) BeginTx(ctx context.Context, opts *sql.TxOptions) (*sql.Tx, error) {
	if err := p.check(); err != nil {
		return nil, err
	}
	return p.DB.BeginTx(ctx, opts)
}

// Conn takes a connection of the read pool.
func (p *readPool) Conn(ctx context.Context) (*sql.Conn, error) {
	if err := p.check(); err != nil {
		return nil, err
	}
	return p.DB.Conn(ctx)
}

// PingContext checks the read pool.
func (p *readPool) PingContext(ctx context.Context) error {
	if err := p.check(); err != nil {
		return err
	}
	return p.DB.PingContext(ctx)
}

// errRow returns a *sql.Row whose Scan returns err, for the QueryRow
// methods above (database/sql has no other way to make one): a query on
// errDB, whose one connector fails with the error the context carries.
// Nothing is opened; it costs only on this error path.
func errRow(err error) *sql.Row {
	return errDB.QueryRowContext(context.WithValue(context.Background(), rowErrKey{}, err), "")
}

type rowErrKey struct{}

var errDB = sql.OpenDB(rowErrConnector{})

type rowErrConnector struct{}

func (rowErrConnector) Connect(ctx context.Context) (driver.Conn, error) {
	if err, ok := ctx.Value(rowErrKey{}).(error); ok {
		return nil, err
	}
	return nil, ErrClosed
}

func (rowErrConnector) Driver() driver.Driver { return rowErrDriver{} }

type rowErrDriver struct{}

func (rowErrDriver) Open(string) (driver.Conn, error) { return nil, ErrClosed }
