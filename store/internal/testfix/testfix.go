// Package testfix holds the fixtures and file probes that the tests of
// package store and of the packages under it (store/backup, ...) share:
// a store filled with events, its log read back, a file's raw bytes and
// one-value queries on it outside the store. Only tests import it.
//
// It runs no engine code of its own beyond SQLite through database/sql,
// which a test of a file needs on either engine's build.
package testfix

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/store"
)

// RawQueryString runs a one-value query on the SQLite file at path
// through database/sql, outside any store.
func RawQueryString(t testing.TB, path, q string) string {
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

// RawFileBytes reads a file with cat: opening a database file in this
// process and closing it would drop SQLite's locks on it. A file that
// does not exist reads as nil.
func RawFileBytes(t testing.TB, path string) []byte {
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

// Holds reports which of the files (a database and its -wal) contain
// needle.
func Holds(t testing.TB, needle []byte, paths ...string) []string {
	t.Helper()
	var in []string
	for _, p := range paths {
		for _, f := range []string{p, p + "-wal"} {
			if bytes.Contains(RawFileBytes(t, f), needle) {
				in = append(in, filepath.Base(f))
			}
		}
	}
	return in
}

// TagMatches counts the tenant's events a query by tag reads.
func TagMatches(t testing.TB, s *store.Store, tenant, tag string) int {
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

// FillStore creates a store at path with n events in streams of up to
// 10 and closes it. Event ids start with prefix.
func FillStore(t testing.TB, path, prefix string, n int) {
	t.Helper()
	ctx := context.Background()
	s, err := store.Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i += 10 {
		evs := make([]envelope.Event, min(10, n-i))
		for j := range evs {
			evs[j] = envelope.Event{ID: fmt.Sprintf("%s-%d", prefix, i+j), Source: "/test/backup", Type: "backup.filled",
				Data: fmt.Appendf(nil, `{"i":%d,"pad":"%s"}`, i+j, strings.Repeat("x", 200))}
		}
		if _, err := s.Append(ctx, "default", fmt.Sprintf("%s-stream-%d", prefix, i/10), store.NoStream, evs...); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// LogEvent is an event as a file holds it.
type LogEvent struct {
	Stream            string
	Position, Version int64
}

// ReadLog opens the store at path and returns every event by
// tenant/id, after checking the store's invariants.
func ReadLog(t testing.TB, path string) map[string]LogEvent {
	t.Helper()
	ctx := context.Background()
	s, err := store.Open(ctx, path, nil)
	if err != nil {
		t.Fatalf("open %s: %v", path, err)
	}
	defer s.Close()
	if err := s.CheckInvariants(ctx); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	out := map[string]LogEvent{}
	for e, err := range s.ReadAll(ctx, store.ReadAllOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		out[e.Tenant+"/"+e.ID] = LogEvent{Stream: e.Stream, Position: e.Position, Version: e.StreamVersion}
	}
	return out
}

// OpenChecked opens a store on addr, closed (after its invariants are
// checked) when tb ends unless the test closed it.
func OpenChecked(tb testing.TB, addr string, opts *store.Options) *store.Store {
	tb.Helper()
	s, err := store.Open(context.Background(), addr, opts)
	if err != nil {
		tb.Fatalf("open store: %v", err)
	}
	tb.Cleanup(func() {
		select {
		case <-s.Done():
			return
		default:
		}
		if err := s.CheckInvariants(context.Background()); err != nil {
			tb.Errorf("after the test: %v", err)
		}
		if err := s.Close(); err != nil {
			tb.Errorf("close store: %v", err)
		}
	})
	return s
}
