package backup_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/backup"
	"github.com/eventlite/eventlite/store/lifecycle"
	"github.com/eventlite/eventlite/store/storetest"
)

// TestRestoreAfterHardDeleteAndScavengeHandsNoVersionOutTwice restores,
// one after another, backups in which a stream lives and in which it is
// hard-deleted, with a scavenge between: every version the stream was
// ever handed out stays handed out, whichever file each restore replaces.
func TestRestoreAfterHardDeleteAndScavengeHandsNoVersionOutTwice(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "live.db")
	s := storetest.MustOpenPath(t, path, nil)
	bak := func(name string) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if _, err := backup.Create(ctx, path, p, nil); err != nil {
			t.Fatal(err)
		}
		return p
	}
	restore := func(from string, want ...backup.RolledBackStream) {
		t.Helper()
		res, err := backup.Restore(ctx, from, path, &backup.RestoreOptions{Force: true})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, res.RolledBack, cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("restore of %s: streams taken back (-want +got):\n%s", filepath.Base(from), diff)
		}
		if err := s.CheckInvariants(ctx); err != nil {
			t.Fatalf("after the restore of %s: %v", filepath.Base(from), err)
		}
		findings, err := s.Diagnose(ctx, store.DiagnoseOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range findings {
			if f.Severity == store.SeverityProblem {
				t.Errorf("doctor after the restore of %s: %s %v: %s", filepath.Base(from), f.Kind, f.IDs, f.Detail)
			}
		}
	}
	seen := map[int64]string{}
	note := func(v int64, what string) {
		t.Helper()
		if prev, ok := seen[v]; ok {
			t.Fatalf("version %d of order-2 handed out twice: %s, then %s", v, prev, what)
		}
		seen[v] = what
	}
	for i := 0; i < 3; i++ {
		note(appendN(t, s, "t1", "order-2", 1).Version, "an append before the backups")
	}
	alive := bak("alive.db") // order-2 at 3
	for i := 0; i < 2; i++ {
		note(appendN(t, s, "t1", "order-2", 1).Version, "an append after the first backup")
	}
	del, err := lifecycle.For(s).Delete(ctx, "t1", "order-2", lifecycle.DeleteOptions{Hard: true})
	if err != nil {
		t.Fatal(err)
	}
	note(del.Version, "the hard delete's tombstone") // 6
	gone := bak("gone.db")
	// Back to the backup in which order-2 lives: it continues at 7 (the
	// restored event), and an append takes 8.
	restore(alive, backup.RolledBackStream{Tenant: "t1", Stream: "order-2", Kept: 3, Had: 6})
	note(7, "the first restore's eventlite.stream.restored event")
	note(appendN(t, s, "t1", "order-2", 1).Version, "an append after the first restore")
	// Back to the hard-deleted stream, whose tombstone is version 6:
	// versions 7 and 8 were handed out all the same, and the restore
	// records them as a gap (no event: the tombstone stays the newest).
	// A scavenge removes what the hard delete allows.
	restore(gone, backup.RolledBackStream{Tenant: "t1", Stream: "order-2", Kept: 6, Had: 8, HardDeleted: true})
	if _, err := lifecycle.For(s).Scavenge(ctx, lifecycle.ScavengeOptions{}); err != nil {
		t.Fatal(err)
	}
	// Back once more to the backup in which order-2 lives: its versions
	// continue above 8.
	restore(alive, backup.RolledBackStream{Tenant: "t1", Stream: "order-2", Kept: 3, Had: 8})
	r := appendN(t, s, "t1", "order-2", 1)
	if r.Version != 10 {
		t.Fatalf("order-2's append after the last restore got version %d, want 10 (versions 4-8 were handed out before, 9 is the restored event)", r.Version)
	}
	note(9, "the last restore's eventlite.stream.restored event")
	note(r.Version, "an append after the last restore")
}
