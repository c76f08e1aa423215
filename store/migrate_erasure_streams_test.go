package store_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/drivertest"
	"github.com/eventlite/eventlite/store/storetest"
)

// TestMigrateErasureStreams: a file from before the record of the
// subjects' streams (migration 0019) gets it filled from the events in
// its log, so that a forget after a later truncate and scavenge still
// finds their snapshots.
func TestMigrateErasureStreams(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "old.db")
	opts := &store.Options{MasterKey: drivertest.MasterKey(t, 18)}
	s, err := store.Open(ctx, path, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range []struct{ tenant, stream, subject string }{
		{"default", "profile-1", "alice"}, {"default", "profile-2", "alice"},
		{"default", "profile-3", "bob"}, {"acme", "profile-1", "alice"},
	} {
		if _, err := s.Append(ctx, a.tenant, a.stream, store.Any, drivertest.Personal(t, a.subject, a.subject+"@example.org")); err != nil {
			t.Fatal(err)
		}
	}
	drivertest.FillStream(t, s, "plain-1", 2)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	storetest.RawExec(t, path, `DROP TABLE erasure_streams`, `PRAGMA user_version = 18`)

	s = storetest.MustOpenPath(t, path, opts) // migrates
	got := rawRows(t, path, `SELECT tenant, subject, stream_id FROM erasure_streams ORDER BY 1, 2, 3`)
	want := []string{
		`[]interface {}{"acme", "alice", "profile-1"}`,
		`[]interface {}{"default", "alice", "profile-1"}`,
		`[]interface {}{"default", "alice", "profile-2"}`,
		`[]interface {}{"default", "bob", "profile-3"}`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("erasure_streams after the migration (-want +got):\n%s", diff)
	}
	if _, err := s.Erasure().Forget(ctx, "default", "alice"); err != nil {
		t.Fatal(err)
	}
}
