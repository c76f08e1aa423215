package store_test

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/internal/inside"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/backup"
	"github.com/eventlite/eventlite/store/drivertest"
	"github.com/eventlite/eventlite/store/erasure"
	"github.com/eventlite/eventlite/store/lifecycle"
	"github.com/eventlite/eventlite/store/storetest"
)

// readModel is a read model of users' emails kept in the store's file,
// as a projection keeps one: it applies events after its checkpoint and
// purges a subject on eventlite.subject.forgotten.
func applyReadModel(t *testing.T, s *store.Store) {
	t.Helper()
	ctx := context.Background()
	err := s.Update(ctx, func(tx *store.Tx) error {
		if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS users (tenant TEXT, subject TEXT, email TEXT)`); err != nil {
			return err
		}
		from, err := store.Bookkeeping(inside.Key{}, tx).Checkpoint(ctx, "users")
		if err != nil {
			return err
		}
		var evs []envelope.Event
		for e, err := range s.ReadAll(ctx, store.ReadAllOptions{From: from + 1}) {
			if err != nil {
				return err
			}
			evs = append(evs, e)
		}
		for _, e := range evs {
			switch {
			case e.Type == erasure.TypeSubjectForgotten:
				d, err := envelope.DecodeData[erasure.SubjectForgotten](e)
				if err != nil {
					return err
				}
				if _, err := tx.ExecContext(ctx, `DELETE FROM users WHERE tenant = ? AND subject = ?`, e.Tenant, d.ErasureKey); err != nil {
					return err
				}
			case e.Type == "user.registered" && !envelope.Erased(e):
				d, err := envelope.DecodeData[map[string]string](e)
				if err != nil {
					return err
				}
				if _, err := tx.ExecContext(ctx, `INSERT INTO users VALUES (?, ?, ?)`, e.Tenant, e.Extensions[store.ExtErasureKey], d["email"]); err != nil {
					return err
				}
			}
			if err := store.Bookkeeping(inside.Key{}, tx).SetCheckpoint(ctx, "users", e.Position, nil); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestErasureProof is the proof of crypto-shredding, byte by byte, on the
// database file, its WAL and backups (docs/erasure.md tells it).
func TestErasureProof(t *testing.T) {
	// The proof runs a scavenge; erasure.Eraser.Scrub is the same removal
	// for a service that does not scavenge.
	t.Run("scavenge", func(t *testing.T) { erasureProof(t, true) })
	t.Run("scrub", func(t *testing.T) { erasureProof(t, false) })
}

func erasureProof(t *testing.T, scavenge bool) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "e.db")
	master := drivertest.MasterKey(t, 42)
	s := storetest.MustOpenPath(t, path, &store.Options{MasterKey: master})
	email := []byte("alice.7c1f0e@example.org")

	// Alice's events, and others' that must survive.
	for _, e := range []envelope.Event{
		drivertest.Personal(t, "alice", string(email)),
		drivertest.Personal(t, "bob", "bob.51aa@example.org"),
		drivertest.Event(t, "user.renamed", map[string]string{"name": "Alice A."}).WithErasureKey("alice"),
		drivertest.Event(t, "user.seen", 1),
	} {
		if _, err := s.Append(ctx, "default", "user-1", store.Any, e); err != nil {
			t.Fatal(err)
		}
	}
	var wrapped, sealed []byte
	if err := s.Update(ctx, func(tx *store.Tx) error {
		if err := tx.QueryRowContext(ctx, `SELECT data FROM events WHERE version = 1`).Scan(&sealed); err != nil {
			return err
		}
		return tx.QueryRowContext(ctx, `SELECT wrapped_key FROM erasure_keys WHERE tenant = 'default' AND subject = 'alice'`).Scan(&wrapped)
	}); err != nil || len(wrapped) < 32 || len(sealed) < len(email) {
		t.Fatalf("wrapped key %x, ciphertext %x, %v", wrapped, sealed, err)
	}
	checkpoint := func() {
		t.Helper()
		if ok, err := store.CheckpointTruncate(ctx, s); err != nil || !ok {
			t.Fatalf("wal_checkpoint(TRUNCATE): %v, %v", ok, err)
		}
	}

	// 1. The events table holds ciphertext only: the file (its WAL
	// checkpointed into it) has no plaintext; it has the wrapped key.
	checkpoint()
	if in := holds(t, email, path); len(in) > 0 {
		t.Fatalf("after appending, the plaintext is in %v: the events table holds it in clear", in)
	}
	if in := holds(t, wrapped, path); len(in) == 0 {
		t.Fatal("the wrapped key is not found in the file: the byte search does not work")
	}
	if in := holds(t, sealed, path); len(in) == 0 {
		t.Fatal("the ciphertext is not found in the file: the byte search does not work")
	}

	// 2. A snapshot and a read model hold the plaintext.
	if err := s.Update(ctx, func(tx *store.Tx) error {
		return tx.SaveSnapshot(ctx, store.Snapshot{Tenant: "default", Stream: "user-1", SchemaVersion: 1, Version: 4,
			State: []byte(`{"email":"` + string(email) + `"}`)})
	}); err != nil {
		t.Fatal(err)
	}
	applyReadModel(t, s)
	checkpoint()
	if in := holds(t, email, path); len(in) == 0 {
		t.Fatal("the snapshot and read model's plaintext is not found in the file: the byte search does not work")
	}
	before := filepath.Join(dir, "before.db")
	if _, err := backup.Create(ctx, s.Path(), before, nil); err != nil {
		t.Fatal(err)
	}

	// 3. Forget, let the read model purge, scrub, checkpoint.
	if _, err := erasure.For(s).Forget(ctx, "default", "alice"); err != nil {
		t.Fatal(err)
	}
	applyReadModel(t, s)
	if scavenge {
		res, err := lifecycle.For(s).Scavenge(ctx, lifecycle.ScavengeOptions{})
		if err != nil || res.Erased != 2 {
			t.Fatalf("Scavenge: erased %d, %v; want 2 events and the WAL checkpointed", res.Erased, err)
		}
	} else {
		sr, err := erasure.For(s).Scrub(ctx)
		if err != nil || sr.Events != 2 || !sr.Checkpointed {
			t.Fatalf("Scrub: %+v, %v; want 2 events and the WAL checkpointed", sr, err)
		}
	}
	after := filepath.Join(dir, "after.db")
	if _, err := backup.Create(ctx, s.Path(), after, nil); err != nil {
		t.Fatal(err)
	}
	if in := holds(t, email, path, after); len(in) > 0 {
		t.Errorf("after forget and scrub, the plaintext is still in %v", in)
	}
	if in := holds(t, wrapped, path, after); len(in) > 0 {
		t.Errorf("after forget and scrub, the wrapped key is still in %v", in)
	}
	if in := holds(t, sealed, path, after); len(in) > 0 {
		t.Errorf("after scrub, the erased event's ciphertext is still in %v", in)
	}
	evs := drivertest.ReadStream(t, s, "default", "user-1")
	if len(evs) != 4 || !envelope.Erased(evs[0]) || envelope.Erased(evs[1]) || !envelope.Erased(evs[2]) ||
		!strings.Contains(string(evs[1].Data), "bob.51aa") {
		t.Fatalf("after scrub: %+v", evs)
	}

	// 4. The backup taken before still decrypts with the master key.
	old := storetest.MustOpenPath(t, before, &store.Options{MasterKey: master, ReadOnly: true})
	oevs := drivertest.ReadStream(t, old, "default", "user-1")
	if !bytes.Contains(oevs[0].Data, email) || envelope.Erased(oevs[0]) {
		t.Fatalf("the backup taken before forget: %s, want the plaintext", oevs[0].Data)
	}
}
