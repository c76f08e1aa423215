package store

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/eventlite/eventlite/envelope"
)

// cacheHits is how many stream states the SQLite writer answered from
// what it remembered instead of a statement.
func cacheHits(t *testing.T, s *Store) int64 {
	t.Helper()
	h, ok := s.stmts.(interface{ StateCacheHits() int64 })
	if !ok {
		t.Fatalf("%T does not count its cache hits", s.stmts)
	}
	return h.StateCacheHits()
}

func cacheEv(id string) envelope.Event {
	return envelope.Event{ID: id, Source: "/test", Type: "t.happened"}
}

// TestStateCacheServes: consecutive appends by one store read the
// stream's state from the writer's memory, not the database, and get the
// versions and positions they would have got from it.
func TestStateCacheServes(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "c.db"), &Options{Synchronous: "NORMAL"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i := range 20 {
		r, err := s.Append(ctx, "acme", fmt.Sprintf("s%d", i%3), Any, cacheEv(fmt.Sprint("e", i)))
		if err != nil {
			t.Fatal(err)
		}
		if r.FirstPosition() != int64(i+1) || r.Version != int64(i/3+1) {
			t.Fatalf("append %d: position %d version %d, want %d and %d", i, r.FirstPosition(), r.Version, i+1, i/3+1)
		}
	}
	if h := cacheHits(t, s); h < 15 {
		t.Errorf("%d of 20 appends read their state from the cache, want at least 15", h)
	}
	if _, err := s.Append(ctx, "acme", "s0", Exact(6), cacheEv("stale")); !errors.Is(err, ErrConflict) {
		t.Errorf("append at a stale version: %v, want ErrConflict", err)
	}
	if _, err := s.Append(ctx, "acme", "s0", NoStream, cacheEv("exists")); !errors.Is(err, ErrConflict) {
		t.Errorf("NoStream on an existing stream: %v, want ErrConflict", err)
	}
	if err := s.CheckInvariants(ctx); err != nil {
		t.Error(err)
	}
}

// TestStateCacheOtherWriter: a second store on the same file (another
// connection, as another process would be) appends, deletes and
// hard-deletes between the first store's appends: the first store sees
// every change (SQLite's data version moved), never its memory of
// before.
func TestStateCacheOtherWriter(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "c.db")
	a, err := Open(ctx, path, &Options{Synchronous: "NORMAL"})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := Open(ctx, path, &Options{Synchronous: "NORMAL"})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	mustAppend := func(s *Store, stream string, exp Expected, id string, pos, ver int64) {
		t.Helper()
		r, err := s.Append(ctx, "acme", stream, exp, cacheEv(id))
		if err != nil {
			t.Fatalf("append %s: %v", id, err)
		}
		if r.FirstPosition() != pos || r.Version != ver {
			t.Fatalf("append %s: position %d version %d, want %d and %d", id, r.FirstPosition(), r.Version, pos, ver)
		}
	}
	mustAppend(a, "s", NoStream, "a1", 1, 1)
	mustAppend(a, "s", Exact(1), "a2", 2, 2) // a remembers s at 2, position 2
	mustAppend(b, "s", Exact(2), "b1", 3, 3)
	mustAppend(a, "s", Exact(3), "a3", 4, 4)
	if _, err := a.Append(ctx, "acme", "s", Exact(3), cacheEv("a-stale")); !errors.Is(err, ErrConflict) {
		t.Fatalf("a's append at version 3 after its own 4: %v, want ErrConflict", err)
	}
	mustAppend(b, "t", Any, "b2", 5, 1)
	mustAppend(a, "s", Any, "a4", 6, 5) // b moved the log's head

	// b soft-deletes s (a tombstone at version 6): for a, s is absent.
	if _, err := b.deleteStream(ctx, nil, "acme", "s", false, "", "", Any); err != nil {
		t.Fatal(err)
	}
	mustAppend(a, "s", NoStream, "a5", 8, 7)
	// b hard-deletes it: a may not write it again.
	if _, err := b.deleteStream(ctx, nil, "acme", "s", true, "", "", Any); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Append(ctx, "acme", "s", Any, cacheEv("a6")); !errors.Is(err, ErrStreamDeleted) {
		t.Fatalf("a's append to a stream b hard-deleted: %v, want ErrStreamDeleted", err)
	}
	if h := cacheHits(t, a); h == 0 {
		t.Error("a never read a stream's state from its cache")
	}
	for _, s := range []*Store{a, b} {
		if err := s.CheckInvariants(ctx); err != nil {
			t.Error(err)
		}
	}
}

// TestStateCacheUnseenWrites: writes the writer's methods do not see (an
// Update closure's, a failed statement's) make it forget what it
// remembered.
func TestStateCacheUnseenWrites(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "c.db"), &Options{Synchronous: "NORMAL"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Append(ctx, "acme", "s", NoStream, cacheEv("1")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Append(ctx, "acme", "s", Exact(1), cacheEv("2")); err != nil {
		t.Fatal(err)
	}
	// A closure hard-deletes s through the same writer.
	if err := s.Update(ctx, func(tx *Tx) error {
		_, err := tx.s.deleteStream(ctx, tx, "acme", "s", true, "", "", Any)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Append(ctx, "acme", "s", Any, cacheEv("3")); !errors.Is(err, ErrStreamDeleted) {
		t.Fatalf("append after the closure's hard delete: %v, want ErrStreamDeleted", err)
	}
	// A closure appends to u by hand (tx.Append) and writes its own SQL:
	// the next append to u continues after it.
	if _, err := s.Append(ctx, "acme", "u", NoStream, cacheEv("u1")); err != nil {
		t.Fatal(err)
	}
	if err := s.Update(ctx, func(tx *Tx) error {
		_, err := tx.Append(ctx, "acme", "u", Exact(1), cacheEv("u2"))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	r, err := s.Append(ctx, "acme", "u", Exact(2), cacheEv("u3"))
	if err != nil {
		t.Fatal(err)
	}
	if r.Version != 3 {
		t.Errorf("u at version %d, want 3", r.Version)
	}
	// An append whose batch fails half-way (its last id is taken) leaves
	// u as it was.
	if _, err := s.Append(ctx, "acme", "u", Exact(3), cacheEv("u4"), cacheEv("u1")); !errors.Is(err, ErrDuplicate) {
		t.Fatalf("a batch with a taken id: %v, want ErrDuplicate", err)
	}
	if r, err = s.Append(ctx, "acme", "u", Exact(3), cacheEv("u4")); err != nil {
		t.Fatal(err)
	} else if r.Version != 4 {
		t.Errorf("u at version %d, want 4", r.Version)
	}
	if err := s.CheckInvariants(ctx); err != nil {
		t.Error(err)
	}
}
