package store_test

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/drivertest"
	"github.com/eventlite/eventlite/store/lifecycle"
	"github.com/eventlite/eventlite/store/storetest"
)

// CheckInvariants finds each defect planted behind the store's back in
// what replaced streams.version and sqlite_sequence (a stream's version
// is its newest event's, positions are handed out above the floor), and
// counts each exactly.
func TestInvariantsFindPlantedDefects(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "eventlite.db")
	s, err := store.Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	drivertest.FillStream(t, s, "a", 3)
	drivertest.FillStream(t, s, "tr", 4)
	if _, err := lifecycle.For(s).Truncate(ctx, "default", "tr", 3, store.Any); err != nil {
		t.Fatal(err)
	}
	if err := s.CheckInvariants(ctx); err != nil {
		t.Fatalf("before the damage: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	storetest.RawExec(t, path,
		// A stream row without events: its version would read 0.
		`INSERT INTO streams (tenant, stream_id, created_at) VALUES ('default', 'ghost', 1)`,
		// Marked deleted, but its newest event is no tombstone.
		`UPDATE streams SET deleted = 1 WHERE stream_id = 'a'`,
		// Reads starting past its newest version (5) plus one.
		`UPDATE streams SET first_version = 7 WHERE stream_id = 'tr'`,
		// Removed positions above the head and the floor: the next
		// append would hand them out again.
		`INSERT INTO removed_ranges (from_position, to_position, removed_at) VALUES (100, 102, 1)`,
		// No floor row.
		`DELETE FROM position_floor`)
	s, err = store.Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	err = s.CheckInvariants(ctx)
	var ie *store.InvariantError
	if !errors.As(err, &ie) {
		t.Fatalf("CheckInvariants: %v, want an *InvariantError", err)
	}
	got := slices.Clone(ie.Problems)
	slices.Sort(got)
	want := []string{
		"1 deleted streams whose newest event is not their tombstone",
		"1 position floor rows other than the one",
		"1 removed positions the next append would hand out again",
		"1 streams whose reads start past their version plus one",
		"1 streams without events",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}
}
