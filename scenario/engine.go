package scenario

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/eventlite/eventlite/store"
)

// PostgresEnv names the variable that, set to a PostgreSQL server's
// address (postgres://...), makes every scenario run on PostgreSQL too,
// each in a fresh schema dropped at the end. The kit links no PostgreSQL
// driver: the test binary does, by importing
// github.com/eventlite/eventlite/store/postgres, which also registers
// database/sql's driver "pgx" that the kit drops the schema through.
// Without the import the PostgreSQL runs fail, naming it.
const PostgresEnv = "EVENTLITE_TEST_POSTGRES"

// engine opens a fresh store for one run of a scenario.
type engine struct {
	name string
	open func(ctx context.Context, t T) (*store.Store, func() error, error)
}

// engines are SQLite, and PostgreSQL when PostgresEnv is set.
func engines() []engine {
	es := []engine{{name: "sqlite", open: openSQLite}}
	if base := os.Getenv(PostgresEnv); base != "" {
		es = append(es, engine{name: "postgres", open: func(ctx context.Context, t T) (*store.Store, func() error, error) {
			return openPostgres(ctx, base)
		}})
	}
	return es
}

// template is a migrated, closed SQLite file, kept in memory: each
// scenario writes it to a file of its own instead of migrating a new one.
var template struct {
	once  sync.Once
	bytes []byte
	err   error
}

var fileSeq atomic.Int64

func templateBytes() ([]byte, error) {
	template.once.Do(func() {
		dir, err := os.MkdirTemp("", "eventlite-scenario-")
		if err != nil {
			template.err = err
			return
		}
		defer os.RemoveAll(dir)
		path := filepath.Join(dir, "template.db")
		s, err := store.Open(context.Background(), path, &store.Options{Synchronous: "NORMAL"})
		if err != nil {
			template.err = fmt.Errorf("migrate the template store: %w", err)
			return
		}
		if err := s.Close(); err != nil {
			template.err = fmt.Errorf("close the template store: %w", err)
			return
		}
		// The last connection's close checkpoints the WAL into the file
		// and removes it; a copy of a file whose WAL still holds commits
		// would miss them.
		if fi, err := os.Stat(path + "-wal"); err == nil && fi.Size() > 0 {
			template.err = errors.New("the template store kept a WAL after closing")
			return
		}
		template.bytes, template.err = os.ReadFile(path)
	})
	return template.bytes, template.err
}

// openSQLite copies the migrated template into t's temp dir and opens it,
// with synchronous=NORMAL: a test is not about power loss.
func openSQLite(ctx context.Context, t T) (*store.Store, func() error, error) {
	b, err := templateBytes()
	if err != nil {
		return nil, nil, err
	}
	path := filepath.Join(t.TempDir(), "scenario-"+strconv.FormatInt(fileSeq.Add(1), 10)+".db")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		return nil, nil, err
	}
	s, err := store.Open(ctx, path, &store.Options{Synchronous: "NORMAL"})
	if err != nil {
		return nil, nil, err
	}
	return s, s.Close, nil
}

// openPostgres opens a store in a schema of its own on the server at
// base; closing it drops the schema.
func openPostgres(ctx context.Context, base string) (*store.Store, func() error, error) {
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, nil, err
	}
	schema := "scenario_" + hex.EncodeToString(b[:])
	u, err := url.Parse(base)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", PostgresEnv, err)
	}
	q := u.Query()
	q.Set("eventlite_schema", schema)
	u.RawQuery = q.Encode()
	s, err := store.Open(ctx, u.String(), nil)
	if err != nil {
		return nil, nil, fmt.Errorf("open PostgreSQL store (%s): %w", PostgresEnv, err)
	}
	return s, func() error {
		err := s.Close()
		db, oerr := sql.Open("pgx", base)
		if oerr != nil {
			return errors.Join(err, fmt.Errorf("drop schema %s: %w (import _ \"github.com/eventlite/eventlite/store/postgres\" in the test)", schema, oerr))
		}
		defer db.Close()
		if _, derr := db.Exec(`DROP SCHEMA IF EXISTS "` + schema + `" CASCADE`); derr != nil {
			err = errors.Join(err, fmt.Errorf("drop schema %s: %w", schema, derr))
		}
		return err
	}, nil
}

// each runs fn once per engine, on a fresh store, and reports what each
// run collected.
func each(t T, what string, fn func(ctx context.Context, r *run, s *store.Store)) {
	t.Helper()
	es := engines()
	for _, e := range es {
		r := &run{t: t, engine: e.name, both: len(es) > 1, what: what}
		ctx, cancel := scenarioContext()
		s, closeStore, err := e.open(ctx, t)
		if err != nil {
			cancel()
			r.fatal("open a store: %v", err)
			return
		}
		func() {
			t.Helper()
			defer cancel()
			defer func() {
				if err := closeStore(); err != nil {
					r.failf("close the store: %v", err)
				}
			}()
			fn(ctx, r, s)
		}()
		r.report()
	}
}
