package store_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/internal/pgdriver"
	"github.com/eventlite/eventlite/store/storetest"
)

// TestPostgresSessionSettings: the writer's connection (read in a write
// transaction) and every read connection run with synchronous_commit on,
// lock_timeout = Options.BusyTimeout, the statement and idle-in-
// transaction timeouts, and the schema as search_path; a setting the
// address names wins over the driver's default.
func TestPostgresSessionSettings(t *testing.T) {
	base := storetest.PostgresBase(t)
	addr := storetest.PostgresSchema(t, base)
	schema := strings.Trim(schemaOf(t, addr), `"`)
	ctx := context.Background()
	want := map[string]string{
		"search_path":                         schema,
		"synchronous_commit":                  "on",
		"lock_timeout":                        "1234ms",
		"statement_timeout":                   "1min",
		"idle_in_transaction_session_timeout": "30s",
		"transaction_isolation":               "read committed",
	}
	check := func(s *store.Store, want map[string]string) {
		t.Helper()
		got, err := store.Pragmas(ctx, s)
		if err != nil {
			t.Fatal(err)
		}
		for _, conn := range []string{"writer", "read1", "read2", "read3"} {
			for name, w := range want {
				v, ok := got[conn+"."+name]
				if name == "search_path" {
					v = strings.Trim(v, `"`)
				}
				if !ok || v != w {
					t.Errorf("%s connection: %s = %q, want %q", conn, name, v, w)
				}
			}
		}
	}
	check(openAddr(t, addr, &store.Options{BusyTimeout: 1234 * time.Millisecond, ReadConns: 3}), want)
	addr2 := withParam(t, withParam(t, addr, "statement_timeout", "7000"), "idle_in_transaction_session_timeout", "2000")
	want["statement_timeout"], want["idle_in_transaction_session_timeout"] = "7s", "2s"
	check(openAddr(t, addr2, &store.Options{BusyTimeout: 1234 * time.Millisecond, ReadConns: 3}), want)
}

// TestPostgresBusyLockTimeout: an append of a second store that waits
// for the head row past its BusyTimeout (lock_timeout, 55P03) fails with
// ErrBusy, stores nothing and leaves its writer usable: once the holder
// commits, the same append succeeds.
func TestPostgresBusyLockTimeout(t *testing.T) {
	base := storetest.PostgresBase(t)
	addr := storetest.PostgresSchema(t, base)
	a := openAddr(t, addr, nil)
	b := openAddr(t, addr, &store.Options{BusyTimeout: 300 * time.Millisecond})
	ctx := context.Background()
	held, err := storeInterleaver{a: a}.hold(ctx, "held")
	if err != nil {
		t.Fatal(err)
	}
	defer held.abort()
	_, err = b.Append(ctx, "t", "behind", store.NoStream, pgEvent("behind"))
	if !errors.Is(err, store.ErrBusy) || !store.Retryable(err) {
		t.Fatalf("an append behind a held head row: %v, want ErrBusy", err)
	}
	if !strings.Contains(err.Error(), "55P03") {
		t.Errorf("ErrBusy, but not from lock_timeout (55P03): %v", err)
	}
	if err := held.commit(); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Append(ctx, "t", "behind", store.NoStream, pgEvent("behind")); err != nil {
		t.Fatalf("the same append once the head row is free: %v", err)
	}
	got, err := pgReadLog(ctx, b, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	if want := []seenEvent{{1, "held"}, {2, "behind"}}; !slices.Equal(got, want) {
		t.Errorf("log %v, want %v", got, want)
	}
}

// TestPostgresBusyDeadlock: a deadlock between an Update closure's
// statements and another session reaches the closure, and so the
// caller of Update, as ErrBusy (40P01). The other session waits for the
// closure's lock first, with a long deadlock_timeout, so that the
// store's session is the one that finds the deadlock and is failed.
func TestPostgresBusyDeadlock(t *testing.T) {
	base := storetest.PostgresBase(t)
	addr := storetest.PostgresSchema(t, base)
	s := openAddr(t, addr, &store.Options{BusyTimeout: time.Minute})
	db := pgSQL(t, base)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	table := schemaOf(t, addr) + ".dl"
	if _, err := db.ExecContext(ctx, `CREATE TABLE `+table+` (k int PRIMARY KEY); INSERT INTO `+table+` VALUES (1), (2)`); err != nil {
		t.Fatal(err)
	}
	other, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	otx, err := other.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = otx.Rollback() }()
	var otherPID int
	if err := otx.QueryRowContext(ctx, `SELECT pg_backend_pid()`).Scan(&otherPID); err != nil {
		t.Fatal(err)
	}
	if _, err := otx.ExecContext(ctx, `SET LOCAL deadlock_timeout = '10min'`); err != nil {
		t.Fatal(err)
	}
	if _, err := otx.ExecContext(ctx, `SELECT k FROM `+table+` WHERE k = 1 FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	have2 := make(chan int, 1)
	otherWaits := make(chan struct{})
	updated := make(chan error, 1)
	go func() {
		updated <- s.Update(ctx, func(tx *store.Tx) error {
			if _, err := tx.ExecContext(ctx, `SELECT k FROM dl WHERE k = 2 FOR UPDATE`); err != nil {
				return err
			}
			var pid int
			if err := tx.QueryRowContext(ctx, `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
				return err
			}
			have2 <- pid
			<-otherWaits
			_, err := tx.ExecContext(ctx, `SELECT k FROM dl WHERE k = 1 FOR UPDATE`)
			return err
		})
	}()
	var storePID int
	select {
	case storePID = <-have2:
	case err := <-updated:
		t.Fatalf("the Update ended before it locked: %v", err)
	}
	otherDone := make(chan error, 1)
	go func() {
		_, err := otx.ExecContext(ctx, `SELECT k FROM `+table+` WHERE k = 2 FOR UPDATE`)
		otherDone <- err
	}()
	if _, blocked, _, err := awaitWaiter(t, ctx, db, storePID, otherDone); !blocked {
		t.Fatalf("the other session did not wait for the store's lock: %v", err)
	}
	close(otherWaits)
	err = <-updated
	if !errors.Is(err, store.ErrBusy) || !strings.Contains(err.Error(), "40P01") {
		t.Fatalf("Update in a deadlock: %v, want ErrBusy from a deadlock (40P01)", err)
	}
	if err := <-otherDone; err != nil {
		t.Errorf("the other session, once the store's transaction was undone: %v", err)
	}
}

// pgSchemaState describes everything a schema holds: each table's name
// and a digest of its rows, and its other relations and functions.
func pgSchemaState(t *testing.T, db *sql.DB, schema string) []string {
	t.Helper()
	ctx := context.Background()
	rows, err := db.QueryContext(ctx, `SELECT c.relname, c.relkind::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = $1
		UNION ALL SELECT p.proname, 'function' FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = $1
		ORDER BY 1, 2`, strings.Trim(schema, `"`))
	if err != nil {
		t.Fatal(err)
	}
	var state, tables []string
	for rows.Next() {
		var name, kind string
		if err := rows.Scan(&name, &kind); err != nil {
			t.Fatal(err)
		}
		state = append(state, kind+" "+name)
		if kind == "r" {
			tables = append(tables, name)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	rows.Close()
	for _, tb := range tables {
		var n int
		var digest sql.NullString
		q := `SELECT count(*), md5(string_agg(r::text, ',' ORDER BY r::text)) FROM ` + schema + `."` + tb + `" r`
		if err := db.QueryRowContext(ctx, q).Scan(&n, &digest); err != nil {
			t.Fatal(err)
		}
		state = append(state, fmt.Sprintf("rows %s: %d %s", tb, n, digest.String))
	}
	return state
}

// TestPostgresMigrateConcurrentProcesses: several processes (and
// goroutines of this one) open one fresh schema at once: every open
// succeeds, each migration is applied once (one schema_migrations row
// per version) and there is one head row.
func TestPostgresMigrateConcurrentProcesses(t *testing.T) {
	base := storetest.PostgresBase(t)
	addr := storetest.PostgresSchema(t, base)
	procs, goroutines := 4, 2
	if testing.Short() {
		procs = 3
	}
	children := make([]*pgChild, procs)
	for i := range children {
		children[i] = startPGChild(t, "open", addr, fmt.Sprintf("%s=%d", envPGProc, i))
	}
	start := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	fail := func(err error) {
		mu.Lock()
		defer mu.Unlock()
		errs = append(errs, err)
	}
	for i, c := range children {
		wg.Go(func() {
			<-start
			if err := c.goAhead(); err != nil {
				fail(err)
				return
			}
			for _, ok := c.next(); ok; _, ok = c.next() {
			}
			if err := c.cmd.Wait(); err != nil {
				fail(fmt.Errorf("process %d: %v: %s", i, err, c.errb.String()))
			}
		})
	}
	for i := range goroutines {
		wg.Go(func() {
			<-start
			s, err := store.Open(context.Background(), addr, nil)
			if err != nil {
				fail(fmt.Errorf("goroutine %d: %w", i, err))
				return
			}
			if err := s.Close(); err != nil {
				fail(fmt.Errorf("goroutine %d: close: %w", i, err))
			}
		})
	}
	close(start)
	wg.Wait()
	for _, err := range errs {
		t.Error(err)
	}
	ms, err := pgdriver.Migrations()
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, m := range ms {
		want = append(want, fmt.Sprintf("%d x1", m.Version))
	}
	db := pgSQL(t, base)
	schema := schemaOf(t, addr)
	rows, err := db.Query(`SELECT version, count(*) FROM ` + schema + `.schema_migrations GROUP BY version ORDER BY version`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var got []string
	for rows.Next() {
		var v, n int
		if err := rows.Scan(&v, &n); err != nil {
			t.Fatal(err)
		}
		got = append(got, fmt.Sprintf("%d x%d", v, n))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Errorf("schema_migrations %v, want %v", got, want)
	}
	var heads int
	if err := db.QueryRow(`SELECT count(*) FROM ` + schema + `.log_head`).Scan(&heads); err != nil || heads != 1 {
		t.Errorf("%d head rows, %v; want 1", heads, err)
	}
}

// TestPostgresSchemaTooNew: a schema whose schema_migrations holds a
// version above the binary's is refused with ErrSchemaTooNew, saying to
// upgrade, and left as it was.
func TestPostgresSchemaTooNew(t *testing.T) {
	base := storetest.PostgresBase(t)
	addr := storetest.PostgresSchema(t, base)
	ctx := context.Background()
	s := openAddr(t, addr, nil)
	if _, err := s.Append(ctx, "t", "s", store.NoStream, pgEvent("a")); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	ms, err := pgdriver.Migrations()
	if err != nil {
		t.Fatal(err)
	}
	db := pgSQL(t, base)
	schema := schemaOf(t, addr)
	if _, err := db.Exec(`INSERT INTO `+schema+`.schema_migrations (version, name, applied_at) VALUES ($1, 'from_the_future.sql', 0)`, len(ms)+1); err != nil {
		t.Fatal(err)
	}
	before := pgSchemaState(t, db, schema)
	for range 2 {
		s, err := store.Open(ctx, addr, nil)
		if err == nil {
			_ = s.Close()
			t.Fatal("a schema from a newer eventlite was opened")
		}
		if !errors.Is(err, store.ErrSchemaTooNew) || !strings.Contains(err.Error(), "upgrade eventlite") {
			t.Errorf("open: %v, want ErrSchemaTooNew saying to upgrade", err)
		}
	}
	if after := pgSchemaState(t, db, schema); !slices.Equal(before, after) {
		t.Errorf("the refused schema changed:\nbefore %v\nafter  %v", before, after)
	}
}

// TestPostgresNotEventlite: a schema that holds other tables and no
// eventlite schema is refused with ErrNotEventlite and left as it was.
func TestPostgresNotEventlite(t *testing.T) {
	base := storetest.PostgresBase(t)
	addr := storetest.PostgresSchema(t, base)
	db := pgSQL(t, base)
	schema := schemaOf(t, addr)
	if _, err := db.Exec(`CREATE SCHEMA ` + schema + `; CREATE TABLE ` + schema + `.customers (id int PRIMARY KEY, name text);
		INSERT INTO ` + schema + `.customers VALUES (1, 'ada')`); err != nil {
		t.Fatal(err)
	}
	before := pgSchemaState(t, db, schema)
	s, err := store.Open(context.Background(), addr, nil)
	if err == nil {
		_ = s.Close()
		t.Fatal("a schema of other tables was opened as an event store")
	}
	if !errors.Is(err, store.ErrNotEventlite) {
		t.Errorf("open: %v, want ErrNotEventlite", err)
	}
	if after := pgSchemaState(t, db, schema); !slices.Equal(before, after) {
		t.Errorf("the refused schema changed:\nbefore %v\nafter  %v", before, after)
	}
}

// TestPostgresPasswordsNeverShown: whatever fails in Open (a role that
// does not exist, a port nothing listens on, a bad schema name, an
// address that does not parse), the error never holds the password, in
// the user info or a password parameter, raw or escaped; a store's Path
// and its logs show the address with the password redacted.
func TestPostgresPasswordsNeverShown(t *testing.T) {
	base := storetest.PostgresBase(t)
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	secret := "pw#" + hex.EncodeToString(b[:]) + "/:@"
	leaks := func(s string) bool {
		for _, form := range []string{secret, url.QueryEscape(secret), url.PathEscape(secret), url.UserPassword("u", secret).String(), strings.Trim(secret, "#/:@")} {
			if strings.Contains(s, form) {
				return true
			}
		}
		return false
	}
	addrWith := func(user, host, schema string, inParam bool) string {
		u, err := url.Parse(storetest.PostgresSchema(t, base))
		if err != nil {
			t.Fatal(err)
		}
		q := u.Query()
		if inParam {
			u.User = url.User(user)
			q.Set("password", secret)
		} else {
			u.User = url.UserPassword(user, secret)
		}
		if host != "" {
			u.Host = host
		}
		if schema != "" {
			q.Set("eventlite_schema", schema)
		}
		u.RawQuery = q.Encode()
		return u.String()
	}
	role := "no_such_role_" + hex.EncodeToString(b[:])
	ctx := context.Background()
	for _, c := range []struct{ name, addr string }{
		{"a role that does not exist", addrWith(role, "", "", false)},
		{"a role that does not exist, password parameter", addrWith(role, "", "", true)},
		{"a port nothing listens on", addrWith("postgres", "127.0.0.1:1", "", false)},
		{"a port nothing listens on, password parameter", addrWith("postgres", "127.0.0.1:1", "", true)},
		{"a bad schema name", addrWith("postgres", "", "Not-A-Schema", false)},
		{"a bad schema name, password parameter", addrWith("postgres", "", "Not-A-Schema", true)},
		{"an address that does not parse", "postgres://postgres:" + url.PathEscape(secret) + "@[::1/test"},
	} {
		s, err := store.Open(ctx, c.addr, &store.Options{BusyTimeout: 2 * time.Second})
		if err == nil {
			_ = s.Close()
			t.Errorf("%s: opened", c.name)
			continue
		}
		if leaks(err.Error()) {
			t.Errorf("%s: the error shows the password: %v", c.name, err)
		}
	}
	// The test server trusts its clients: a store opens with any password,
	// and its Path and logs must not show it.
	for _, inParam := range []bool{false, true} {
		var logs bytes.Buffer
		addr := addrWith("postgres", "", "", inParam)
		s := openAddr(t, addr, &store.Options{Logger: hclog.New(&hclog.LoggerOptions{Output: &logs, Level: hclog.Trace})})
		if leaks(s.Path()) || !strings.Contains(s.Path(), "xxxxx") {
			t.Errorf("Path() %q: want the password replaced by xxxxx", s.Path())
		}
		if _, err := s.Append(ctx, "t", "s", store.NoStream, pgEvent("e")); err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		_, err := s.Append(ctx, "t", "s", store.Any, pgEvent("f"))
		if err == nil || leaks(err.Error()) {
			t.Errorf("an append on the closed store: %v", err)
		}
		if logs.Len() == 0 {
			t.Error("the store logged nothing: the log was not checked")
		}
		if leaks(logs.String()) {
			t.Errorf("the logs show the password:\n%s", logs.String())
		}
	}
}
