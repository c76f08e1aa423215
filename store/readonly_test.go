package store_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	_ "modernc.org/sqlite"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/internal/inside"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/outbox"
	"github.com/eventlite/eventlite/store/storetest"
)

// A file that is not an eventlite database is refused by every open,
// read-only or not, with ErrNotEventlite, and left byte for byte as it was,
// with no -wal, -shm or -journal beside it.
func TestOpenRefusesForeignFile(t *testing.T) {
	t.Parallel()
	files := []struct {
		name string
		make func(t *testing.T, path string)
	}{
		{"an application's database", func(t *testing.T, p string) {
			storetest.RawExec(t, p, "CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT)", "INSERT INTO users (name) VALUES ('ada')")
		}},
		{"an application's WAL database", func(t *testing.T, p string) {
			storetest.RawExec(t, p, "PRAGMA journal_mode=WAL", "CREATE TABLE notes (body TEXT)", "INSERT INTO notes VALUES ('x')", "PRAGMA user_version=3")
		}},
		{"a database with an events table of its own", func(t *testing.T, p string) {
			storetest.RawExec(t, p, "CREATE TABLE events (id INTEGER PRIMARY KEY)", "CREATE TABLE streams (id TEXT)", "CREATE TABLE outbox (id TEXT)")
		}},
		{"a database with only an index-free view", func(t *testing.T, p string) {
			storetest.RawExec(t, p, "CREATE VIEW v AS SELECT 1")
		}},
		{"no tables but a user_version", func(t *testing.T, p string) {
			storetest.RawExec(t, p, "PRAGMA user_version=2")
		}},
		{"a text file", func(t *testing.T, p string) {
			if err := os.WriteFile(p, []byte("not a database, but the user's notes\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, f := range files {
		for _, ro := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/ReadOnly=%v", f.name, ro), func(t *testing.T) {
				t.Parallel()
				path := filepath.Join(t.TempDir(), "app.db")
				f.make(t, path)
				before := storetest.DirDigest(t, filepath.Dir(path))
				s, err := store.Open(t.Context(), path, &store.Options{ReadOnly: ro})
				if err == nil {
					s.Close()
				}
				var ne *store.NotEventliteError
				if !errors.Is(err, store.ErrNotEventlite) || !errors.As(err, &ne) || ne.Path == "" {
					t.Fatalf("Open: %v, want ErrNotEventlite", err)
				}
				t.Logf("refused: %v", err)
				if diff := cmp.Diff(before, storetest.DirDigest(t, filepath.Dir(path))); diff != "" {
					t.Errorf("the refused file changed (-before +after):\n%s", diff)
				}
			})
		}
	}
}

// A zero-byte file or a SQLite file without tables becomes an eventlite
// database through a write open only: a read-only open refuses it with
// ErrSchemaTooOld and leaves it unchanged.
func TestEmptyFileBecomesEventliteOnlyByWriting(t *testing.T) {
	t.Parallel()
	for name, make := range map[string]func(t *testing.T, path string){
		"zero bytes": func(t *testing.T, p string) {
			if err := os.WriteFile(p, nil, 0o644); err != nil {
				t.Fatal(err)
			}
		},
		"no tables": func(t *testing.T, p string) {
			storetest.RawExec(t, p, "CREATE TABLE gone (x)", "DROP TABLE gone")
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "e.db")
			make(t, path)
			before := storetest.DirDigest(t, filepath.Dir(path))
			_, err := store.Open(t.Context(), path, &store.Options{ReadOnly: true})
			if !errors.Is(err, store.ErrSchemaTooOld) {
				t.Fatalf("read-only Open: %v, want ErrSchemaTooOld", err)
			}
			if diff := cmp.Diff(before, storetest.DirDigest(t, filepath.Dir(path))); diff != "" {
				t.Errorf("a read-only open changed the file (-before +after):\n%s", diff)
			}
			s := storetest.MustOpenPath(t, path, nil)
			if _, err := s.Append(t.Context(), "default", "s", store.Any, newEvent(t)); err != nil {
				t.Fatalf("append after a write open: %v", err)
			}
		})
	}
}

func newEvent(t *testing.T) envelope.Event {
	t.Helper()
	e, err := envelope.New("thing.happened", map[string]int{"n": 1})
	if err != nil {
		t.Fatal(err)
	}
	e.Source = "/test"
	return e
}

// A read-only open of a missing file is ErrNotFound and creates nothing.
func TestReadOnlyMissingFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	_, err := store.Open(t.Context(), filepath.Join(dir, "missing.db"), &store.Options{ReadOnly: true})
	if !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Open: %v, want ErrNotFound", err)
	}
	if es, _ := os.ReadDir(dir); len(es) != 0 {
		t.Errorf("a read-only open left %v", es)
	}
}

// A read-only store reads what a writer appended, sees a writer's later
// commits, refuses every write with ErrReadOnly, and leaves the file as it
// found it: same bytes, no -wal or -shm once everything is closed.
func TestReadOnlyStore(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "events.db")
	w, err := store.Open(ctx, path, &store.Options{Synchronous: "NORMAL"})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := w.Append(ctx, "default", "s", store.Any, newEvent(t)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	before := storetest.DirDigest(t, filepath.Dir(path))

	r, err := store.Open(ctx, path, &store.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := versionsOf(t, r, "s"); !slices.Equal(got, []int64{1, 2, 3}) {
		t.Errorf("read-only read: versions %v", got)
	}
	writes := map[string]func() error{
		"Append": func() error {
			_, err := r.Append(ctx, "default", "s", store.Any, newEvent(t))
			return err
		},
		"Update": func() error { return r.Update(ctx, func(*store.Tx) error { return nil }) },
		"SetApplicationID": func() error {
			return r.Update(ctx, func(tx *store.Tx) error { return store.Bookkeeping(inside.Key{}, tx).SetApplicationID(ctx, 7) })
		},
		"Outbox.RetryDeadLetters": func() error {
			_, err := outbox.For(r).RetryDeadLetters(ctx, "default")
			return err
		},
	}
	for name, write := range writes {
		if err := write(); !errors.Is(err, store.ErrReadOnly) {
			t.Errorf("%s on a read-only store: %v, want ErrReadOnly", name, err)
		}
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(before, storetest.DirDigest(t, filepath.Dir(path))); diff != "" {
		t.Errorf("a read-only store changed the file (-before +after):\n%s", diff)
	}

	// Beside a writer: it sees the writer's commits.
	w = storetest.MustOpenPath(t, path, nil)
	r, err = store.Open(ctx, path, &store.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	changed := r.Changed()
	if _, err := w.Append(ctx, "default", "s", store.Any, newEvent(t)); err != nil {
		t.Fatal(err)
	}
	<-changed
	if got := versionsOf(t, r, "s"); !slices.Equal(got, []int64{1, 2, 3, 4}) {
		t.Errorf("read-only read beside a writer: versions %v", got)
	}
}

func versionsOf(t *testing.T, s *store.Store, stream string) []int64 {
	t.Helper()
	var vs []int64
	for e, err := range s.ReadStream(context.Background(), "default", stream, store.ReadStreamOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		vs = append(vs, e.StreamVersion)
	}
	return vs
}
