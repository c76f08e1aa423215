package backup_test

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/eventlite/eventlite/store"
	_ "github.com/eventlite/eventlite/store/postgres"
)

// envDB names the database file a helper child works on.
const envDB = "EVENTLITE_DB"

// helperFail ends a helper child with a message on stderr.
func helperFail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "helper %s: %s\n", os.Getenv(envBackupHelper), fmt.Sprintf(format, args...))
	os.Exit(3)
}

// rawQueryString runs a one-value query on path through database/sql.
func rawQueryString(t *testing.T, path, q string) string {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.ToSlash(path))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var v string
	if err := db.QueryRow(q).Scan(&v); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return v
}

// walCheckpoint moves the WAL of the database at path into the file and
// truncates it, from a connection of its own, and fails unless it did.
func walCheckpoint(t *testing.T, path string) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.ToSlash(path))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var busy, frames, done int64
	if err := db.QueryRow(`PRAGMA wal_checkpoint(TRUNCATE)`).Scan(&busy, &frames, &done); err != nil || busy != 0 {
		t.Fatalf("checkpoint %s: busy %d, %v", path, busy, err)
	}
}

// rawFileBytes reads a file with cat: opening a database file in this
// process and closing it would drop SQLite's locks on it.
func rawFileBytes(t *testing.T, path string) []byte {
	t.Helper()
	if _, err := os.Stat(path); os.IsNotExist(err) {
		return nil
	}
	b, err := exec.Command("cat", path).Output()
	if err != nil {
		t.Fatalf("cat %s: %v", path, err)
	}
	return b
}

// holds reports which of the files (a database and its -wal) contain
// needle.
func holds(t *testing.T, needle []byte, paths ...string) []string {
	t.Helper()
	var in []string
	for _, p := range paths {
		for _, f := range []string{p, p + "-wal"} {
			if bytes.Contains(rawFileBytes(t, f), needle) {
				in = append(in, filepath.Base(f))
			}
		}
	}
	return in
}

// tagMatches counts the tenant's events a query by tag reads.
func tagMatches(t *testing.T, s *store.Store, tenant, tag string) int {
	t.Helper()
	n := 0
	for _, err := range s.ReadAll(context.Background(), store.ReadAllOptions{Tenant: tenant, Query: store.Query{Items: []store.QueryItem{{Tags: []string{tag}}}}}) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	return n
}
