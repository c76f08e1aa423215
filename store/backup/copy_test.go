package backup_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/eventlite/eventlite/internal/inside"
	"github.com/eventlite/eventlite/internal/projrow"
	"github.com/eventlite/eventlite/projection"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/backup"
	"github.com/eventlite/eventlite/store/drivertest"
	"github.com/eventlite/eventlite/store/lifecycle"
	"github.com/eventlite/eventlite/store/storetest"
)

// copySource builds a SQLite store holding a row in most of the store's
// tables: events in three tenants, a relay's publish and a dead letter,
// a projection checkpoint, a quarantined event, a retention policy and
// the removed range of its scavenge, an erasure key. The relay's lease
// is released; the lease "held" is live until release is called.
func copySource(t *testing.T) (path string, release func()) {
	t.Helper()
	ctx := context.Background()
	path = filepath.Join(t.TempDir(), "src.db")
	s, err := store.Open(ctx, path, &store.Options{MasterKey: drivertest.MasterKey(t, 1)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	for _, tenant := range []string{"default", "acme", "globex"} {
		drivertest.AppendN(t, s, tenant, "order-1", 3)
		drivertest.AppendN(t, s, tenant, "order-2", 2)
	}
	if _, err := s.Append(ctx, "acme", "user-1", store.NoStream, drivertest.Personal(t, "alice", "a@example.org")); err != nil {
		t.Fatal(err)
	}
	// A relay publishes everything; a scavenge trims tmp-1, a second one
	// removes the events of the hard-deleted gone-1.
	drivertest.AppendN(t, s, "default", "tmp-1", 4)
	storetest.PublishAll(t, s)
	if err := lifecycle.For(s).SetRetention(ctx, lifecycle.RetentionPolicy{Prefix: "tmp-", MaxCount: 1}); err != nil {
		t.Fatal(err)
	}
	if res := drivertest.Scavenge(t, s, lifecycle.ScavengeOptions{}); res.Removed != 3 {
		t.Fatalf("the retention scavenge removed %d events, want 3: %+v", res.Removed, res)
	}
	drivertest.AppendN(t, s, "default", "gone-1", 2)
	if _, err := lifecycle.For(s).Delete(ctx, "default", "gone-1", lifecycle.DeleteOptions{Hard: true}); err != nil {
		t.Fatal(err)
	}
	storetest.PublishAll(t, s)
	if res := drivertest.Scavenge(t, s, lifecycle.ScavengeOptions{}); res.Removed != 2 {
		t.Fatalf("the scavenge of gone-1 removed %d events, want 2: %+v", res.Removed, res)
	}
	err = s.Update(ctx, func(tx *store.Tx) error {
		if err := store.Bookkeeping(inside.Key{}, tx).SetCheckpoint(ctx, "orders", 5, nil); err != nil {
			return err
		}
		return store.Bookkeeping(inside.Key{}, tx).Quarantine(ctx, projrow.Quarantined{Consumer: "orders", Reason: string(projection.ReasonHandlerError), Tenant: "default",
			Subject: "order-1", Version: 2, Position: 2, EventID: "e-2", Error: "boom", Attempts: 1})
	})
	if err != nil {
		t.Fatal(err)
	}
	// Restored with a higher sequence, the file has handed out positions
	// up to 30, above the newest it holds: the target must not hand them
	// out again.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	restored := filepath.Join(t.TempDir(), "restored.db")
	if _, err := backup.Restore(ctx, path, restored, &backup.RestoreOptions{MinSequence: 30}); err != nil {
		t.Fatal(err)
	}
	s, err = store.Open(ctx, restored, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	held, err := store.Inner(inside.Key{}, s).AcquireLease(ctx, "held", "worker-1", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return restored, func() {
		if err := store.Inner(inside.Key{}, s).ReleaseLease(ctx, held); err != nil {
			t.Fatal(err)
		}
	}
}

func TestCopyToPostgres(t *testing.T) {
	base := storetest.PostgresBase(t)
	ctx := context.Background()
	src, release := copySource(t)
	target := storetest.PostgresSchema(t, base)

	// A live lease refuses the copy, which writes nothing.
	_, err := backup.Copy(ctx, src, target, nil)
	var le *backup.LiveLeaseError
	if !errors.As(err, &le) || !errors.Is(err, store.ErrLeaseHeld) || len(le.Leases) != 1 {
		t.Fatalf("copy while a lease is held: %v; want a *LiveLeaseError naming it", err)
	}
	release()

	var phases []backup.CopyPhase
	rebuilt := false
	res, err := backup.Copy(ctx, src, target, &backup.CopyOptions{
		Target: &store.Options{MasterKey: drivertest.MasterKey(t, 1)},
		Progress: func(p backup.CopyProgress) {
			if len(phases) == 0 || phases[len(phases)-1] != p.Phase {
				phases = append(phases, p.Phase)
			}
		},
		Rebuild: func(context.Context, *store.Store) error { rebuilt = true; return nil },
	})
	if err != nil {
		t.Fatalf("copy: %v", err)
	}
	if !rebuilt || len(phases) == 0 || phases[len(phases)-1] != backup.CopyPhaseDone {
		t.Errorf("rebuild ran: %v; phases %v", rebuilt, phases)
	}
	want := map[string]int64{"events": 19, "outbox": 19, "streams": 9, "leases": 2, "checkpoints": 1, "quarantine": 1,
		"retention_policies": 1, "removed_ranges": 2, "removed_event_ids": 5, "erasure_keys": 1, "position_holes": 1}
	got := map[string]int64{}
	for _, tb := range res.Tables {
		got[tb.Name] = tb.Rows
	}
	for name, n := range want {
		if got[name] != n {
			t.Errorf("%s: copied %d rows, want %d (all: %v)", name, got[name], n, res.Tables)
		}
	}
	if res.Sequence != 30 || res.Digest == "" {
		t.Errorf("sequence %d digest %q; want 30 and a digest", res.Sequence, res.Digest)
	}

	// The source's data reads the same on the target, and its next
	// append follows the last position the source handed out.
	s, err := store.Open(ctx, target, &store.Options{MasterKey: drivertest.MasterKey(t, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	srcStore, err := store.Open(ctx, src, &store.Options{ReadOnly: true, MasterKey: drivertest.MasterKey(t, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer srcStore.Close()
	for _, tenant := range []string{"default", "acme", "globex"} {
		a, b := drivertest.ReadStream(t, srcStore, tenant, "order-1"), drivertest.ReadStream(t, s, tenant, "order-1")
		if len(a) != 3 || len(b) != len(a) {
			t.Fatalf("%s order-1: %d events in the source, %d in the target", tenant, len(a), len(b))
		}
		for i := range a {
			if a[i].ID != b[i].ID || a[i].Position != b[i].Position || !a[i].Time.Equal(b[i].Time) || string(a[i].Data) != string(b[i].Data) {
				t.Errorf("%s order-1 event %d: %+v in the source, %+v in the target", tenant, i, a[i], b[i])
			}
		}
	}
	r, err := s.Append(ctx, "default", "next", store.NoStream, drivertest.Event(t, "t", nil))
	if err != nil {
		t.Fatal(err)
	}
	if r.Events[0].Position != res.Sequence+1 {
		t.Errorf("the target's next append took position %d, want %d", r.Events[0].Position, res.Sequence+1)
	}

	// A target with rows is refused, unchanged.
	_, err = backup.Copy(ctx, src, target, nil)
	var te *backup.CopyTargetError
	if !errors.As(err, &te) || !errors.Is(err, backup.ErrTargetNotEmpty) {
		t.Fatalf("copy into a filled schema: %v; want a *CopyTargetError", err)
	}
	if h, err := s.Head(ctx); err != nil || h != res.Sequence+1 {
		t.Errorf("head after the refused copy: %d, %v", h, err)
	}

	// The encrypted event decrypts on the target with the same master key.
	a := drivertest.ReadStream(t, srcStore, "acme", "user-1")
	for e, err := range s.ReadStream(ctx, "acme", "user-1", store.ReadStreamOptions{}) {
		if err != nil || string(e.Data) != string(a[0].Data) {
			t.Errorf("the encrypted event reads %q, %v on the target, %q in the source", e.Data, err, a[0].Data)
		}
	}
}

func TestCopyForceReleasesLiveLeases(t *testing.T) {
	base := storetest.PostgresBase(t)
	ctx := context.Background()
	src, _ := copySource(t)
	target := storetest.PostgresSchema(t, base)
	res, err := backup.Copy(ctx, src, target, &backup.CopyOptions{Force: true})
	if err != nil {
		t.Fatalf("copy --force: %v", err)
	}
	if len(res.ReleasedLeases) != 1 {
		t.Errorf("released leases %v, want the one held", res.ReleasedLeases)
	}
	s, err := store.Open(ctx, target, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// The lease arrives released: another owner takes it, with a newer token.
	l, err := store.Inner(inside.Key{}, s).AcquireLease(ctx, "held", "worker-2", time.Minute)
	if err != nil {
		t.Fatalf("acquire the copied lease: %v", err)
	}
	if l.Token < 2 {
		t.Errorf("token %d: the copied token was not kept", l.Token)
	}
}

func TestCopyRefusesOtherEngines(t *testing.T) {
	ctx := context.Background()
	for _, c := range [][2]string{{"postgres://h/db", "postgres://h/db2"}, {"a.db", "b.db"}} {
		if _, err := backup.Copy(ctx, c[0], c[1], nil); !errors.Is(err, store.ErrUnsupported) {
			t.Errorf("copy %s -> %s: %v; want ErrUnsupported", c[0], c[1], err)
		}
	}
}
