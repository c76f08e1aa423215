package store_test

import (
	"context"
	"database/sql"
	"errors"
	"net/url"
	"path/filepath"
	"testing"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/backup"
	"github.com/eventlite/eventlite/store/storetest"
)

// TestPositionLimit: positions stop at envelope.MaxPosition. A restore's
// MinSequence past it (or negative) is refused with the target
// unchanged; restored just below it, appends take the last positions,
// and an append that would pass it is refused with *PositionRangeError,
// nothing stored (today the position wrapped around to a negative one).
func TestPositionLimit(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	live := filepath.Join(dir, "live.db")
	fillStore(t, live, "b", 3)
	bak := filepath.Join(dir, "backup.db")
	if _, err := backup.Create(ctx, live, bak, nil); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(dir, "target.db")
	for _, min := range []int64{envelope.MaxPosition + 1, -1} {
		_, err := backup.Restore(ctx, bak, target, &backup.RestoreOptions{MinSequence: min})
		var re *store.PositionRangeError
		if !errors.As(err, &re) || !errors.Is(err, store.ErrPositionRange) || re.Value != min || re.Max != envelope.MaxPosition {
			t.Errorf("restore --min-sequence %d: %v, want *PositionRangeError", min, err)
		}
		if got := fileBytes(t, target); got != "<missing>" {
			t.Fatalf("a refused restore created the target")
		}
	}
	if _, err := backup.Restore(ctx, bak, target, &backup.RestoreOptions{MinSequence: envelope.MaxPosition - 2}); err != nil {
		t.Fatal(err)
	}
	s := storetest.MustOpenPath(t, target, nil)
	checkPositionLimit(t, s)
}

// TestPostgresPositionLimit: the same limit on PostgreSQL (the append
// path's check is shared), with the log's head set near it by hand.
func TestPostgresPositionLimit(t *testing.T) {
	base := storetest.PostgresBase(t)
	addr := storetest.PostgresSchema(t, base)
	s := openAddr(t, addr, nil)
	u, _ := url.Parse(addr)
	admin, err := sql.Open("pgx", base)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if _, err := admin.Exec(`UPDATE "`+u.Query().Get("eventlite_schema")+`".log_head SET position = $1`, envelope.MaxPosition-2); err != nil {
		t.Fatal(err)
	}
	checkPositionLimit(t, s)
}

// checkPositionLimit appends to s, whose log handed out positions up
// to MaxPosition-2: two events fit, a third does not.
func checkPositionLimit(t *testing.T, s *store.Store) {
	t.Helper()
	ctx := context.Background()
	ev := func(id string) envelope.Event { return envelope.Event{ID: id, Source: "/test", Type: "t.limit"} }
	// Two events when one is left: refused, nothing stored.
	r, err := s.Append(ctx, "default", "near", store.NoStream, ev("a"))
	if err != nil || r.LastPosition() != envelope.MaxPosition-1 {
		t.Fatalf("append below the limit: %+v %v, want position %d", r, err, envelope.MaxPosition-1)
	}
	_, err = s.Append(ctx, "default", "near", store.Any, ev("b"), ev("c"))
	var re *store.PositionRangeError
	if !errors.As(err, &re) || re.Events != 2 || re.Value != envelope.MaxPosition-1 {
		t.Fatalf("append of 2 events with 1 position left: %v, want *PositionRangeError", err)
	}
	r, err = s.Append(ctx, "default", "near", store.Any, ev("b"))
	if err != nil || r.LastPosition() != envelope.MaxPosition {
		t.Fatalf("append of the last position: %+v %v, want %d", r, err, envelope.MaxPosition)
	}
	if _, err := s.Append(ctx, "default", "other", store.Any, ev("d")); !errors.Is(err, store.ErrPositionRange) {
		t.Fatalf("append past the last position: %v, want ErrPositionRange", err)
	}
	if r, err := s.Append(ctx, "default", "near", store.Any, ev("b")); err != nil || r.LastPosition() != envelope.MaxPosition {
		t.Fatalf("a retry of the last append: %+v %v, want its first result", r, err)
	}
	var positions []int64
	for e, err := range s.ReadAll(ctx, store.ReadAllOptions{From: envelope.MaxPosition - 5}) {
		if err != nil {
			t.Fatal(err)
		}
		positions = append(positions, e.Position)
	}
	if len(positions) != 2 || positions[0] != envelope.MaxPosition-1 || positions[1] != envelope.MaxPosition {
		t.Errorf("positions near the limit: %v, want the last two", positions)
	}
}
