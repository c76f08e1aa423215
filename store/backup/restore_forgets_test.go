package backup_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/backup"
	"github.com/eventlite/eventlite/store/drivertest"
	"github.com/eventlite/eventlite/store/erasure"
	"github.com/eventlite/eventlite/store/storetest"
)

// countSnapshots counts the snapshots of a stream.
func countSnapshots(t *testing.T, s *store.Store, tenant, stream string) int {
	t.Helper()
	var n int
	err := s.Update(context.Background(), func(tx *store.Tx) error {
		return tx.QueryRowContext(context.Background(), `SELECT count(*) FROM snapshots WHERE tenant = $1 AND stream_id = $2`, tenant, stream).Scan(&n)
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestRestoreRefusesToUnforget restores a backup taken before a forget
// over the store that forgot: without ReapplyForgets the restore is
// refused with an *UnforgetError naming the subjects and the database is
// left unchanged; with it, the restored database has the subjects
// forgotten again (the key destroyed, the tombstone kept), their
// snapshots dropped, and neither their plaintext nor their ciphertext
// is in the file or its WAL. Before the fix, restore --force brought
// alice's key back and her data decrypted.
func TestRestoreRefusesToUnforget(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "live.db")
	master := drivertest.MasterKey(t, 35)
	s := storetest.MustOpenPath(t, path, &store.Options{MasterKey: master})
	email := "alice.35f4@example.org"
	for _, e := range []envelope.Event{drivertest.Personal(t, "alice", email), drivertest.Personal(t, "bob", "bob.35f4@example.org")} {
		if _, err := s.Append(ctx, "default", "user-"+erasureKey(e), store.Any, e); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Update(ctx, func(tx *store.Tx) error {
		return tx.SaveSnapshot(ctx, store.Snapshot{Tenant: "default", Stream: "user-alice", SchemaVersion: 1, Version: 1,
			State: []byte(`{"email":"` + email + `"}`)})
	}); err != nil {
		t.Fatal(err)
	}
	bak := filepath.Join(dir, "backup.db")
	if _, err := backup.Create(ctx, path, bak, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := erasure.For(s).Forget(ctx, "default", "alice"); err != nil {
		t.Fatal(err)
	}
	// carol's events only ever came from another service: a tombstone.
	if fr, err := erasure.For(s).Forget(ctx, "default", "carol"); err != nil || !fr.Tombstone {
		t.Fatalf("forget carol: %+v, %v; want a tombstone", fr, err)
	}
	head, _ := s.Head(ctx)

	_, err := backup.Restore(ctx, bak, path, &backup.RestoreOptions{Force: true})
	var ue *backup.UnforgetError
	if !errors.As(err, &ue) || !errors.Is(err, backup.ErrUnforget) {
		t.Fatalf("restore of a backup taken before a forget: %v, want an *UnforgetError", err)
	}
	want := []backup.ForgottenSubject{{Tenant: "default", Subject: "alice"}, {Tenant: "default", Subject: "carol"}}
	if diff := cmp.Diff(want, ue.Subjects); diff != "" {
		t.Errorf("subjects (-want +got):\n%s", diff)
	}
	if !strings.Contains(err.Error(), "--reapply-forgets") || !strings.Contains(err.Error(), "Nothing was changed") {
		t.Errorf("the message does not say what to do: %v", err)
	}
	if got, _ := s.Head(ctx); got != head {
		t.Fatalf("the refused restore changed the database: head %d, was %d", got, head)
	}
	if evs := drivertest.ReadStream(t, s, "default", "user-alice"); !envelope.Erased(evs[0]) {
		t.Fatalf("after the refused restore alice's event reads %s", evs[0].Data)
	}

	res, err := backup.Restore(ctx, bak, path, &backup.RestoreOptions{Force: true, ReapplyForgets: true})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, res.Reforgotten); diff != "" {
		t.Errorf("Reforgotten (-want +got):\n%s", diff)
	}
	// A store opened now, and the one open across the restore, read
	// alice as erased and bob in clear.
	for _, st := range []*store.Store{storetest.MustOpenPath(t, path, &store.Options{MasterKey: master}), s} {
		if evs := drivertest.ReadStream(t, st, "default", "user-alice"); len(evs) != 1 || !envelope.Erased(evs[0]) || evs[0].Data != nil {
			t.Fatalf("after the restore alice's event reads %+v, want erased", evs)
		}
		if evs := drivertest.ReadStream(t, st, "default", "user-bob"); len(evs) != 1 || !strings.Contains(string(evs[0].Data), "bob.35f4") {
			t.Fatalf("after the restore bob's event reads %+v", evs)
		}
	}
	if n := countSnapshots(t, s, "default", "user-alice"); n != 0 {
		t.Errorf("alice's snapshot survived the restore: %d", n)
	}
	// Each subject forgotten again is announced in the restored log, so
	// that read models in the file purge it.
	var announced []string
	for _, e := range drivertest.ReadStream(t, s, "default", erasure.ForgottenStream) {
		if e.Type == erasure.TypeSubjectForgotten {
			d, err := envelope.DecodeData[erasure.SubjectForgotten](e)
			if err != nil {
				t.Fatal(err)
			}
			announced = append(announced, d.ErasureKey)
		}
	}
	if diff := cmp.Diff([]string{"alice", "carol"}, announced); diff != "" {
		t.Errorf("eventlite.subject.forgotten in the restored log (-want +got):\n%s", diff)
	}
	_, err = s.Append(ctx, "default", "user-carol", store.Any, drivertest.Personal(t, "carol", "c@example.org"))
	if !errors.Is(err, store.ErrInvalidEvent) {
		t.Errorf("an append under carol (tombstone re-applied): %v, want refused", err)
	}
	walCheckpoint(t, path)
	if in := holds(t, []byte(email), path); len(in) > 0 {
		t.Errorf("after the restore alice's plaintext is in %v", in)
	}
	// A restore of the same backup again finds nothing new to refuse
	// only with the flag: the backup still holds alice's key.
	if _, err := backup.Restore(ctx, bak, path, &backup.RestoreOptions{Force: true}); !errors.Is(err, backup.ErrUnforget) {
		t.Errorf("a second restore of the backup: %v, want ErrUnforget", err)
	}
}

// erasureKey is an event's erasurekey extension.
func erasureKey(e envelope.Event) string {
	k, _ := e.Extensions[store.ExtErasureKey].(string)
	return k
}

// TestCopyRefusesToUnforget copies a backup taken before a forget into
// PostgreSQL, naming the live store that forgot (ForgetsFrom): refused
// with an *UnforgetError and nothing written; with ReapplyForgets the
// target reads the subject as erased, without its tags (no query by
// them matches), has no snapshot of its stream and refuses appends
// under it.
func TestCopyRefusesToUnforget(t *testing.T) {
	base := storetest.PostgresBase(t)
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "live.db")
	master := drivertest.MasterKey(t, 36)
	s, err := store.Open(ctx, path, &store.Options{MasterKey: master})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, e := range []envelope.Event{drivertest.Personal(t, "alice", "alice.36c@example.org"), drivertest.Personal(t, "bob", "bob.36c@example.org")} {
		e.Tags = []string{"user:" + erasureKey(e)}
		if _, err := s.Append(ctx, "default", "user-"+erasureKey(e), store.Any, e); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Update(ctx, func(tx *store.Tx) error {
		return tx.SaveSnapshot(ctx, store.Snapshot{Tenant: "default", Stream: "user-alice", SchemaVersion: 1, Version: 1, State: []byte(`{"email":"alice.36c@example.org"}`)})
	}); err != nil {
		t.Fatal(err)
	}
	bak := filepath.Join(dir, "backup.db")
	if _, err := backup.Create(ctx, path, bak, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := erasure.For(s).Forget(ctx, "default", "alice"); err != nil {
		t.Fatal(err)
	}

	target := storetest.PostgresSchema(t, base)
	_, err = backup.Copy(ctx, bak, target, &backup.CopyOptions{ForgetsFrom: path, Target: &store.Options{MasterKey: master}})
	var ue *backup.UnforgetError
	if !errors.As(err, &ue) || len(ue.Subjects) != 1 || ue.Subjects[0].Subject != "alice" {
		t.Fatalf("copy of a backup taken before a forget: %v, want an *UnforgetError naming alice", err)
	}
	res, err := backup.Copy(ctx, bak, target, &backup.CopyOptions{ForgetsFrom: path, ReapplyForgets: true, Target: &store.Options{MasterKey: master}})
	if err != nil {
		t.Fatalf("copy --reapply-forgets into a target the refused copy left empty: %v", err)
	}
	if len(res.Reforgotten) != 1 || res.Reforgotten[0].Subject != "alice" {
		t.Errorf("Reforgotten %+v", res.Reforgotten)
	}
	pg, err := store.Open(ctx, target, &store.Options{MasterKey: master})
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close()
	if evs := drivertest.ReadStream(t, pg, "default", "user-alice"); len(evs) != 1 || !envelope.Erased(evs[0]) || len(evs[0].Tags) > 0 {
		t.Fatalf("alice in the copy: %+v, want erased, without tags", evs)
	}
	// Her tags went with her data, from the event and the index; bob's stay.
	if n := tagMatches(t, pg, "default", "user:alice"); n != 0 {
		t.Errorf("%d events match user:alice in the copy", n)
	}
	if n := tagMatches(t, pg, "default", "user:bob"); n != 1 {
		t.Errorf("%d events match user:bob in the copy, want 1", n)
	}
	if evs := drivertest.ReadStream(t, pg, "default", "user-bob"); len(evs) != 1 || !strings.Contains(string(evs[0].Data), "bob.36c") {
		t.Fatalf("bob in the copy: %+v", evs)
	}
	if n := countSnapshots(t, pg, "default", "user-alice"); n != 0 {
		t.Errorf("alice's snapshot was copied: %d", n)
	}
	if _, err := pg.Append(ctx, "default", "user-alice", store.Any, drivertest.Personal(t, "alice", "x")); !errors.Is(err, store.ErrInvalidEvent) {
		t.Errorf("append under alice in the copy: %v, want refused", err)
	}
}
