// Package storetest opens real stores for tests and checks the log's
// invariants after every test that uses them.
//
// It opens SQLite files in t.TempDir and, with EVENTLITE_TEST_POSTGRES,
// PostgreSQL schemas that each test drops.
package storetest

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"

	"github.com/eventlite/eventlite/store"
)

// MustOpen opens a store on a new file in tb's temp dir, with
// synchronous=NORMAL unless opts says otherwise (tests that are not about
// durability need not pay for fsync). When the test ends it checks the
// store's invariants (store.CheckInvariants) and closes it: a test that
// leaves a broken log fails.
func MustOpen(tb testing.TB, opts *store.Options) *store.Store {
	tb.Helper()
	return MustOpenPath(tb, filepath.Join(tb.TempDir(), "eventlite.db"), opts)
}

// MustOpenPath is MustOpen on a given path.
func MustOpenPath(tb testing.TB, path string, opts *store.Options) *store.Store {
	tb.Helper()
	var o store.Options
	if opts != nil {
		o = *opts
	}
	if o.Synchronous == "" {
		o.Synchronous = "NORMAL"
	}
	s, err := store.Open(context.Background(), path, &o)
	if err != nil {
		tb.Fatalf("open store: %v", err)
	}
	tb.Cleanup(func() {
		if err := s.CheckInvariants(context.Background()); err != nil {
			tb.Errorf("after the test: %v", err)
		}
		if err := s.Close(); err != nil {
			tb.Errorf("close store: %v", err)
		}
	})
	return s
}

// RawExec runs stmts on the SQLite file at path through database/sql,
// outside the store: to make a file that is not eventlite's, or to damage
// one on purpose.
func RawExec(tb testing.TB, path string, stmts ...string) {
	tb.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.ToSlash(path))
	if err != nil {
		tb.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	for _, q := range stmts {
		if _, err := db.Exec(q); err != nil {
			tb.Fatalf("%.60s: %v", q, err)
		}
	}
	if err := db.Close(); err != nil {
		tb.Fatal(err)
	}
}

// DirDigest maps each file in dir to a digest of its content: what an
// operation that must change nothing has to leave as it found, new files
// (a -wal, a -shm) included. Call it only while no connection of this
// process has the files open: reading a database file with os.ReadFile
// and closing it drops SQLite's locks.
func DirDigest(tb testing.TB, dir string) map[string]string {
	tb.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		tb.Fatal(err)
	}
	out := make(map[string]string, len(ents))
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			tb.Fatal(err)
		}
		sum := sha256.Sum256(b)
		out[e.Name()] = hex.EncodeToString(sum[:])
	}
	return out
}
