package pgdriver

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// TestSessionSettings: every pooled session runs with the settings Open
// was given, and every transaction sets search_path to the schema.
func TestSessionSettings(t *testing.T) {
	db := openTest(t, &Options{PoolSize: 3, BusyTimeout: 1234 * time.Millisecond, StatementTimeout: 45 * time.Second, IdleInTxTimeout: 17 * time.Second})
	ctx := context.Background()
	if got := db.Pool().Config().MaxConns; got != 3 {
		t.Errorf("pool size %d, want 3", got)
	}
	// Hold all three connections, so the settings are checked on each.
	var conns []*pgxConn
	for range 3 {
		c, err := db.Pool().Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, &pgxConn{c.Conn(), c.Release})
	}
	for _, c := range conns {
		var sc, lt, st, it string
		if err := c.QueryRow(ctx, "SELECT current_setting('synchronous_commit'), current_setting('lock_timeout'), current_setting('statement_timeout'), current_setting('idle_in_transaction_session_timeout')").Scan(&sc, &lt, &st, &it); err != nil {
			t.Fatal(err)
		}
		if sc != "on" || lt != "1234ms" || st != "45s" || it != "17s" {
			t.Errorf("session settings synchronous_commit=%s lock_timeout=%s statement_timeout=%s idle_in_transaction_session_timeout=%s", sc, lt, st, it)
		}
		c.release()
	}
	// search_path inside a write transaction, and back to the session's
	// after it (SET LOCAL). One connection, so the same session is checked.
	one := openSchema(t, db.schema, &Options{PoolSize: 1})
	w, err := one.BeginWrite(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var sp string
	if err := w.tx.QueryRow(ctx, "SHOW search_path").Scan(&sp); err != nil {
		t.Fatal(err)
	}
	if sp != db.quoted && sp != db.schema {
		t.Errorf("search_path in a write transaction: %q, want %s", sp, db.schema)
	}
	pid := w.pid()
	// Committed: a plain SET in a rolled back transaction is undone too.
	if err := w.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	c, err := one.Pool().Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Release()
	if c.Conn().PgConn().PID() != pid {
		t.Fatal("a pool of one gave another session")
	}
	if err := c.QueryRow(ctx, "SHOW search_path").Scan(&sp); err != nil {
		t.Fatal(err)
	}
	if sp == db.schema || sp == db.quoted {
		t.Errorf("search_path outlived the transaction: %q", sp)
	}
}

type pgxConn struct {
	*pgx.Conn
	release func()
}

// TestBusyLockTimeout: an append behind a write transaction that holds the
// head lock past the busy timeout fails with ErrBusy (lock_timeout,
// 55P03), and writes nothing.
func TestBusyLockTimeout(t *testing.T) {
	db := openTest(t, &Options{BusyTimeout: 200 * time.Millisecond, AcquireTimeout: time.Minute})
	ctx := context.Background()
	holder, err := db.BeginWrite(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Rollback()
	_, err = db.Append(ctx, "t", "s", Any, []Event{ev("behind")})
	var be *BusyError
	if !errors.Is(err, ErrBusy) || !errors.As(err, &be) || be.Code != codeLockTimeout {
		t.Fatalf("append behind a held head lock: %v, want ErrBusy from lock_timeout", err)
	}
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		t.Errorf("the PostgreSQL error is not wrapped: %v", err)
	}
	holder.Rollback()
	if h, err := db.Head(ctx); err != nil || h != 0 {
		t.Errorf("head %d, %v after the busy append; want 0", h, err)
	}
}

// TestBusyPool: with every pooled connection in use past the acquire
// timeout, a call fails with ErrBusy; the caller's own deadline is not
// ErrBusy.
func TestBusyPool(t *testing.T) {
	db := openTest(t, &Options{PoolSize: 1, AcquireTimeout: 200 * time.Millisecond, BusyTimeout: time.Minute})
	ctx := context.Background()
	holder, err := db.BeginWrite(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Rollback()
	_, err = db.ReadAfter(ctx, 0, 10)
	var be *BusyError
	if !errors.Is(err, ErrBusy) || !errors.As(err, &be) || be.Code != "pool" {
		t.Fatalf("read with the only connection in use: %v, want ErrBusy (pool)", err)
	}
	cctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if _, err := db.ReadAfter(cctx, 0, 10); errors.Is(err, ErrBusy) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("the caller's deadline: %v, want context.DeadlineExceeded, not ErrBusy", err)
	}
}

// TestBusyMapping: deadlocks and serialization failures are ErrBusy too,
// with the PostgreSQL error still reachable; other errors are not.
func TestBusyMapping(t *testing.T) {
	for _, c := range []struct {
		code string
		busy bool
	}{{codeDeadlock, true}, {codeSerialization, true}, {codeLockTimeout, true}, {"23505", false}, {"42P01", false}} {
		err := classify("op", &pgconn.PgError{Code: c.code})
		if errors.Is(err, ErrBusy) != c.busy {
			t.Errorf("%s: busy %v, want %v", c.code, errors.Is(err, ErrBusy), c.busy)
		}
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != c.code {
			t.Errorf("%s: the PostgreSQL error is lost: %v", c.code, err)
		}
	}
}

// TestBusyDeadlock: a real deadlock between two transactions reaches the
// caller as ErrBusy.
func TestBusyDeadlock(t *testing.T) {
	db := openTest(t, &Options{BusyTimeout: time.Minute})
	ctx := context.Background()
	if _, err := db.Pool().Exec(ctx, "CREATE TABLE "+db.quoted+".dl (k int PRIMARY KEY); INSERT INTO "+db.quoted+".dl VALUES (1), (2)"); err != nil {
		t.Fatal(err)
	}
	lock := func(tx pgx.Tx, k int) error {
		_, err := tx.Exec(ctx, "SELECT k FROM "+db.quoted+".dl WHERE k = $1 FOR UPDATE", k)
		if err != nil {
			tx.Rollback(ctx) //nolint:errcheck // frees the other transaction
		}
		return classify("lock", err)
	}
	t1, err := db.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer t1.Rollback(ctx) //nolint:errcheck
	t2, err := db.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer t2.Rollback(ctx) //nolint:errcheck
	if err := lock(t1, 1); err != nil {
		t.Fatal(err)
	}
	if err := lock(t2, 2); err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() { errc <- lock(t1, 2) }()
	err2 := lock(t2, 1)
	err1 := <-errc
	// PostgreSQL breaks the deadlock by failing one of the two.
	if !errors.Is(err1, ErrBusy) && !errors.Is(err2, ErrBusy) {
		t.Fatalf("deadlock: %v / %v, want one ErrBusy", err1, err2)
	}
	for _, err := range []error{err1, err2} {
		var be *BusyError
		if errors.As(err, &be) && be.Code != codeDeadlock {
			t.Errorf("code %s, want %s", be.Code, codeDeadlock)
		}
	}
}

// TestIdleHolderCannotStall: a write transaction left idle while it holds
// the head lock (a stopped process) is ended by the server after
// IdleInTxTimeout; the writer behind it then goes on, and the idle one's
// commit fails, its append never stored.
func TestIdleHolderCannotStall(t *testing.T) {
	db := openTest(t, &Options{IdleInTxTimeout: 300 * time.Millisecond, BusyTimeout: 30 * time.Second})
	ctx := context.Background()
	holder, err := db.BeginWrite(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Rollback() // on failure; else db.Close waits for it
	if _, err := holder.Append(ctx, "t", "idle", NoStream, []Event{ev("idle")}); err != nil {
		t.Fatal(err)
	}
	// Blocks behind the holder until the server ends the idle session.
	res, err := db.Append(ctx, "t", "behind", NoStream, []Event{ev("behind")})
	if err != nil || res.First != 1 {
		t.Fatalf("the append behind an idle holder: %+v, %v; want position 1", res, err)
	}
	if err := holder.Commit(ctx); err == nil {
		t.Error("the idle holder's commit succeeded after the server ended its session")
	}
	recs, err := db.ReadAfter(ctx, 0, 10)
	if err != nil || len(recs) != 1 || recs[0].ID != "behind" {
		t.Errorf("log %+v, %v; want only the event behind", recs, err)
	}
}
