package store_test

import (
	"context"
	"database/sql"
	"net/url"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/drivertest"
	"github.com/eventlite/eventlite/store/erasure"
	"github.com/eventlite/eventlite/store/lifecycle"
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
	if _, err := erasure.For(s).Forget(ctx, "default", "alice"); err != nil {
		t.Fatal(err)
	}
}

// TestMigrateErasureStreamsPostgres is TestMigrateErasureStreams on
// PostgreSQL: a schema set back to before migration 0004 (the table
// dropped, the migration's row deleted) gets the record filled from the
// events in its log when a store opens it, and a forget then finds the
// snapshots of every stream of the subject.
func TestMigrateErasureStreamsPostgres(t *testing.T) {
	base := storetest.PostgresBase(t)
	addr := storetest.PostgresSchema(t, base)
	ctx := context.Background()
	opts := &store.Options{MasterKey: drivertest.MasterKey(t, 19)}
	s, err := store.Open(ctx, addr, opts)
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
	if err := s.Update(ctx, func(tx *store.Tx) error {
		return tx.SaveSnapshot(ctx, store.Snapshot{Tenant: "default", Stream: "profile-2", SchemaVersion: 1, Version: 1, State: []byte(`{"email":"alice@example.org"}`)})
	}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(addr)
	if err != nil {
		t.Fatal(err)
	}
	schema := u.Query().Get("eventlite_schema")
	pgExec(t, base, `DROP TABLE `+schema+`.erasure_streams`, `DELETE FROM `+schema+`.schema_migrations WHERE version >= 4`)

	s, err = store.Open(ctx, addr, opts) // migrates
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got := pgRows(t, base, `SELECT tenant, subject, stream_id FROM `+schema+`.erasure_streams ORDER BY 1, 2, 3`)
	want := []string{"acme alice profile-1", "default alice profile-1", "default alice profile-2", "default bob profile-3"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("erasure_streams after the migration (-want +got):\n%s", diff)
	}
	// The events go; the record stays, and forget still drops the
	// snapshot.
	if _, err := s.Append(ctx, "default", "profile-2", store.Any, drivertest.Event(t, "profile.seen", 1)); err != nil {
		t.Fatal(err)
	}
	if _, err := lifecycle.For(s).Truncate(ctx, "default", "profile-2", 2, store.Any); err != nil {
		t.Fatal(err)
	}
	storetest.PublishAll(t, s)
	if res := drivertest.Scavenge(t, s, lifecycle.ScavengeOptions{}); res.Removed != 1 {
		t.Fatalf("the scavenge removed %d events, want alice's event of profile-2: %+v", res.Removed, res)
	}
	fr, err := erasure.For(s).Forget(ctx, "default", "alice")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"profile-1", "profile-2"}, fr.Streams); diff != "" {
		t.Errorf("forget's streams (-want +got):\n%s", diff)
	}
	if n := countSnapshots(t, s, "default", "profile-2"); n != 0 {
		t.Errorf("the snapshot of profile-2 survived the forget: %d", n)
	}
}

// pgExec runs statements on the server at base.
func pgExec(t *testing.T, base string, stmts ...string) {
	t.Helper()
	db, err := sql.Open("pgx", base)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range stmts {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// pgRows reads the rows of q on the server at base, each as its text
// columns joined by spaces.
func pgRows(t *testing.T, base, q string) []string {
	t.Helper()
	db, err := sql.Open("pgx", base)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var a, b, c string
		if err := rows.Scan(&a, &b, &c); err != nil {
			t.Fatal(err)
		}
		out = append(out, a+" "+b+" "+c)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
