package pgdriver

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Options configure Open. A nil *Options, and every zero field, means the
// default.
type Options struct {
	// Schema names the schema of the store's tables. Default: the
	// address's eventlite_schema parameter, else DefaultSchema. Giving
	// both with different values is an error.
	Schema string
	// PoolSize is the most connections the pool opens. Default 8.
	PoolSize int32
	// BusyTimeout is how long a statement waits for a lock (PostgreSQL's
	// lock_timeout) before the call fails with ErrBusy. Default 5s.
	BusyTimeout time.Duration
	// AcquireTimeout is how long a call waits for a free pooled connection
	// before it fails with ErrBusy. Default: BusyTimeout.
	AcquireTimeout time.Duration
	// StatementTimeout ends any one statement that runs longer (PostgreSQL's
	// statement_timeout). Default 60s.
	StatementTimeout time.Duration
	// IdleInTxTimeout ends a session that sits idle inside a transaction
	// longer (idle_in_transaction_session_timeout), so that a stopped
	// process holding the head lock cannot stall every other writer for
	// long. Default 30s.
	IdleInTxTimeout time.Duration
}

const (
	defaultPoolSize         = 8
	defaultBusyTimeout      = 5 * time.Second
	defaultStatementTimeout = 60 * time.Second
	defaultIdleInTxTimeout  = 30 * time.Second
)

// OptionError says which option is wrong.
type OptionError struct {
	Field, Reason string
}

func (e *OptionError) Error() string {
	return fmt.Sprintf("pgdriver option %s: %s", e.Field, e.Reason)
}

func (o *Options) withDefaults() (Options, error) {
	var r Options
	if o != nil {
		r = *o
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"BusyTimeout", r.BusyTimeout}, {"AcquireTimeout", r.AcquireTimeout}, {"StatementTimeout", r.StatementTimeout}, {"IdleInTxTimeout", r.IdleInTxTimeout}} {
		if d.v < 0 {
			return r, &OptionError{Field: d.name, Reason: "negative: use 0 for the default"}
		}
		if d.v > 0 && d.v < time.Millisecond {
			return r, &OptionError{Field: d.name, Reason: "below 1ms, PostgreSQL's resolution (0 would mean no limit there)"}
		}
	}
	if r.PoolSize < 0 {
		return r, &OptionError{Field: "PoolSize", Reason: "negative: use 0 for the default"}
	}
	if r.PoolSize == 0 {
		r.PoolSize = defaultPoolSize
	}
	if r.BusyTimeout == 0 {
		r.BusyTimeout = defaultBusyTimeout
	}
	if r.AcquireTimeout == 0 {
		r.AcquireTimeout = r.BusyTimeout
	}
	if r.StatementTimeout == 0 {
		r.StatementTimeout = defaultStatementTimeout
	}
	if r.IdleInTxTimeout == 0 {
		r.IdleInTxTimeout = defaultIdleInTxTimeout
	}
	return r, nil
}

// DB is a pool of sessions on one schema of a PostgreSQL database.
type DB struct {
	pool   *pgxpool.Pool
	opts   Options
	schema string
	quoted string // the schema as a quoted identifier
	addr   string // redacted
}

// Open parses addr (see ParseAddress), configures the pool and checks that
// the server answers. Every session it opens runs with
// synchronous_commit=on, lock_timeout=BusyTimeout, statement_timeout and
// idle_in_transaction_session_timeout. Errors never hold the password.
func Open(ctx context.Context, addr string, opts *Options) (*DB, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	a, err := ParseAddress(addr)
	if err != nil {
		return nil, err
	}
	schema := a.Schema
	if o.Schema != "" {
		if err := ValidateSchema(o.Schema); err != nil {
			return nil, err
		}
		if a.SchemaGiven && o.Schema != a.Schema {
			return nil, &OptionError{Field: "Schema", Reason: fmt.Sprintf("%q differs from the address's %s %q: give one", o.Schema, SchemaParam, a.Schema)}
		}
		schema = o.Schema
	}
	cfg, err := pgxpool.ParseConfig(a.ConnString)
	if err != nil {
		// pgx redacts the password in its own message; scrub it again.
		return nil, &AddressError{Address: a.Redacted, Reason: scrub(err.Error(), a.ConnString)}
	}
	cfg.MaxConns = o.PoolSize
	cfg.MinConns = 0
	rp := cfg.ConnConfig.RuntimeParams
	rp["synchronous_commit"] = "on"
	rp["lock_timeout"] = ms(o.BusyTimeout)
	rp["statement_timeout"] = ms(o.StatementTimeout)
	rp["idle_in_transaction_session_timeout"] = ms(o.IdleInTxTimeout)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", a.Redacted, err)
	}
	db := &DB{pool: pool, opts: o, schema: schema, quoted: pgx.Identifier{schema}.Sanitize(), addr: a.Redacted}
	if err := db.ping(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	return db, nil
}

func ms(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }

// Schema returns the schema the store's tables live in.
func (db *DB) Schema() string { return db.schema }

// Pool returns the pgx pool, for the driver that will be built on it.
func (db *DB) Pool() *pgxpool.Pool { return db.pool }

// Close closes the pool, waiting for connections in use to come back.
func (db *DB) Close() { db.pool.Close() }

func (db *DB) ping(ctx context.Context) error {
	c, err := db.acquire(ctx, "connect")
	if err != nil {
		return err
	}
	defer c.Release()
	if err := c.Ping(ctx); err != nil {
		return classify("connect to "+db.addr, err)
	}
	return nil
}

// acquire takes a pooled connection, waiting at most AcquireTimeout; a
// wait that ran out (not the caller's ctx) is ErrBusy.
func (db *DB) acquire(ctx context.Context, op string) (*pgxpool.Conn, error) {
	actx, cancel := context.WithTimeout(ctx, db.opts.AcquireTimeout)
	defer cancel()
	c, err := db.pool.Acquire(actx)
	if err == nil {
		return c, nil
	}
	var ce *pgconn.ConnectError
	if ctx.Err() == nil && errors.Is(actx.Err(), context.DeadlineExceeded) && !errors.As(err, &ce) {
		return nil, &BusyError{Op: op, Code: "pool", Err: err}
	}
	return nil, classify(op+" ("+db.addr+")", err)
}
