package pgdriver

import (
	"context"
	"database/sql"
	sqldriver "database/sql/driver"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/eventlite/eventlite/store/internal/driver"
	"github.com/eventlite/eventlite/store/internal/pgaddr"
)

// Driver is the PostgreSQL driver. It holds no state.
type Driver struct{}

var _ driver.Driver = Driver{}

// Dialect is driver.Postgres.
func (Driver) Dialect() driver.Dialect { return driver.Postgres }

// Executor returns Exec.
func (Driver) Executor() driver.Executor { return Exec{} }

// Session defaults. A setting the address names itself (pgx sends every
// parameter it does not know to the server as a run-time setting, for
// example ?idle_in_transaction_session_timeout=10000) wins over these.
const (
	defaultStatementTimeout = 60 * time.Second
	// defaultIdleInTxTimeout ends a session that sits idle inside a
	// transaction longer, so that a stopped process (SIGSTOP) holding
	// the head row cannot stall every other writer past it. An Update
	// closure that keeps its transaction open longer without a statement
	// is ended too.
	defaultIdleInTxTimeout = 30 * time.Second
)

// connector builds the database/sql connector of cfg: pgx's stdlib
// adapter on the address without the eventlite_schema parameter, with the
// store's session settings and the schema as the search path.
func connector(cfg driver.OpenConfig, role string) (*sql.DB, *pgaddr.Address, error) {
	a, err := pgaddr.ParseAddress(cfg.Path)
	if err != nil {
		return nil, nil, err
	}
	schema := a.Schema
	if cfg.Schema != "" {
		if err := pgaddr.ValidateSchema(cfg.Schema); err != nil {
			return nil, nil, err
		}
		if a.SchemaGiven && cfg.Schema != a.Schema {
			return nil, nil, &pgaddr.AddressError{Address: a.Redacted, Reason: fmt.Sprintf("Options.Schema %q differs from the address's %s %q: give one", cfg.Schema, pgaddr.SchemaParam, a.Schema)}
		}
		schema = cfg.Schema
	}
	a.Schema = schema
	pc, err := pgx.ParseConfig(a.ConnString)
	if err != nil {
		// pgx redacts the password in its own message; scrub it again.
		return nil, nil, &pgaddr.AddressError{Address: a.Redacted, Reason: pgaddr.Scrub(err.Error(), a.ConnString)}
	}
	rp := pc.RuntimeParams
	set := func(k, v string) {
		if _, ok := rp[k]; !ok {
			rp[k] = v
		}
	}
	rp["search_path"] = pgx.Identifier{schema}.Sanitize()
	rp["synchronous_commit"] = "on"
	set("lock_timeout", ms(cfg.BusyTimeout))
	set("statement_timeout", ms(defaultStatementTimeout))
	set("idle_in_transaction_session_timeout", ms(defaultIdleInTxTimeout))
	// JIT compiles a query whose estimated cost is high, and the
	// store's reads that stop after a few rows (the relay's, with a
	// LIMIT, on a large log) carry such estimates: compiling took
	// seconds where the query takes a millisecond.
	set("jit", "off")
	// pg_stat_activity shows which store and which of its pools a
	// session serves.
	set("application_name", "eventlite "+role+" "+schema)
	if cfg.ReadOnly {
		rp["default_transaction_read_only"] = "on"
	}
	return stdlib.OpenDB(*pc), a, nil
}

func ms(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }

// OpenWriter opens the writer's pool: one connection, kept for the store's
// life.
func (Driver) OpenWriter(cfg driver.OpenConfig) (*sql.DB, error) {
	db, _, err := connector(cfg, "writer")
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	db.SetConnMaxLifetime(0)
	db.SetConnMaxIdleTime(0)
	return db, nil
}

// OpenReader opens the read pool of conns connections.
func (Driver) OpenReader(cfg driver.OpenConfig, conns int) (*sql.DB, error) {
	db, _, err := connector(cfg, "reader")
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(conns)
	db.SetMaxIdleConns(conns)
	return db, nil
}

// InitNew does nothing: PostgreSQL takes no setting only on an empty
// schema, and ApplyMigration creates the schema under the schema's
// advisory lock. Creating it here, outside that lock, failed when
// several processes opened a new schema at once: CREATE SCHEMA IF NOT
// EXISTS is not safe against a concurrent one (a unique violation in
// pg_namespace).
func (Driver) InitNew(context.Context, driver.Querier) error { return nil }

// EnableWAL does nothing: PostgreSQL always writes ahead.
func (Driver) EnableWAL(context.Context, driver.Querier) error { return nil }

// CommitCounter reads log_head.commits, which every write transaction
// moves first thing (Writer.Begin, BeginSQL). The head row is one
// row: another process's commit is seen at once, on any connection.
func (Driver) CommitCounter(ctx context.Context, q driver.ReadQuerier) (int64, error) {
	var n int64
	err := q.QueryRowContext(ctx, `SELECT commits FROM log_head`).Scan(&n)
	return n, err
}

var settingNames = []string{"search_path", "synchronous_commit", "lock_timeout", "statement_timeout", "idle_in_transaction_session_timeout", "transaction_isolation"}

// SettingNames are the session settings the store relies on.
func (Driver) SettingNames() []string { return settingNames }

// Setting reads one of them with SHOW.
func (Driver) Setting(ctx context.Context, q driver.ReadQuerier, name string) (string, error) {
	ok := false
	for _, n := range settingNames {
		ok = ok || n == name
	}
	if !ok {
		return "", fmt.Errorf("pgdriver: unknown setting %q", name)
	}
	var v string
	err := q.QueryRowContext(ctx, `SHOW `+name).Scan(&v)
	return v, err
}

// PostgreSQL error codes the store treats specially.
const (
	codeDeadlock      = "40P01" // deadlock_detected
	codeSerialization = "40001" // serialization_failure
	codeLockTimeout   = "55P03" // lock_not_available (lock_timeout)
	codeIdleInTx      = "25P03" // idle_in_transaction_session_timeout
)

// Classify tells the engine's errors apart (classifyPG).
func (Driver) Classify(err error) driver.Class { return classifyPG(err) }

// classifyPG: deadlocks, serialization failures and lock waits past
// lock_timeout are Busy (retrying may succeed); an integrity constraint
// violation (class 23) is Constraint.
//
// A session the server ended (class 08 connection exceptions, 57P0x
// shutdowns, the idle-in-transaction timeout's 25P03, or a connection
// pgx closed) is ConnectionLost.
func classifyPG(err error) driver.Class {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		// database/sql answers ErrConnDone for a transaction or
		// connection whose session pgx had already found closed; pgx
		// answers ErrConnClosed for a statement on it.
		if errors.Is(err, sqldriver.ErrBadConn) || errors.Is(err, sql.ErrConnDone) || errors.Is(err, pgconn.ErrConnClosed) || pgconn.SafeToRetry(err) {
			return driver.ConnectionLost
		}
		return driver.Other
	}
	switch {
	case pe.Code == codeDeadlock, pe.Code == codeSerialization, pe.Code == codeLockTimeout:
		return driver.Busy
	case len(pe.Code) == 5 && pe.Code[:2] == "23":
		return driver.Constraint
	case pe.Code == codeIdleInTx, strings.HasPrefix(pe.Code, "08"), strings.HasPrefix(pe.Code, "57P0"):
		return driver.ConnectionLost
	case pe.Code == "42601", pe.Code == "42702", pe.Code == "42703": // syntax_error, ambiguous_column, undefined_column
		return driver.Statement
	}
	return driver.Other
}
