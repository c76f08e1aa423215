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

// TestScavengeAfterRestoreAgreesAcrossEngines: a restore takes a
// soft-deleted stream back, so that its eventlite.stream.restored event
// lies above its tombstone; the file is copied into PostgreSQL. On both
// engines a scavenge, and its dry run first, remove the events before
// the tombstone and keep the tombstone (the stream's newest event but
// the restore's): the dry run lists what the scavenge then removes, the
// two engines remove the same, reads return the same, and the
// invariants and doctor hold. (PostgreSQL's plan once counted the
// tombstone: its dry run listed it, the scavenge kept it.)
func TestScavengeAfterRestoreAgreesAcrossEngines(t *testing.T) {
	base := storetest.PostgresBase(t)
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "live.db")
	s, err := store.Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	appendN(t, s, "t1", "order-1", 3)
	if _, err := lifecycle.For(s).Delete(ctx, "t1", "order-1", lifecycle.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	bak := filepath.Join(dir, "backup.db")
	if _, err := backup.Create(ctx, path, bak, nil); err != nil {
		t.Fatal(err)
	}
	appendN(t, s, "t1", "order-1", 2) // a write to the deleted stream takes it back
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	res, err := backup.Restore(ctx, bak, path, &backup.RestoreOptions{Force: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.RolledBack) != 1 {
		t.Fatalf("restore took back %+v, want order-1", res.RolledBack)
	}
	target := storetest.PostgresSchema(t, base)
	if _, err := backup.Copy(ctx, path, target, nil); err != nil {
		t.Fatalf("copy: %v", err)
	}

	type outcome struct {
		Dry, Done []lifecycle.ScavengedStream
		Reads     []string
		Total     int64 // the most the scavenge said it may remove
	}
	run := func(engine, addr string) outcome {
		t.Helper()
		st, err := store.Open(ctx, addr, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		storetest.PublishAll(t, st) // unpublished events are held back
		var o outcome
		dry, err := lifecycle.For(st).Scavenge(ctx, lifecycle.ScavengeOptions{DryRun: true})
		if err != nil {
			t.Fatalf("%s: dry run: %v", engine, err)
		}
		var total int64
		done, err := lifecycle.For(st).Scavenge(ctx, lifecycle.ScavengeOptions{Progress: func(_, most int64) { total = most }})
		if err != nil {
			t.Fatalf("%s: scavenge: %v", engine, err)
		}
		o.Dry, o.Done, o.Total = dry.Streams, done.Streams, total
		if dry.Removed != done.Removed {
			t.Errorf("%s: the dry run would remove %d events, the scavenge removed %d", engine, dry.Removed, done.Removed)
		}
		if diff := cmp.Diff(dry.Streams, done.Streams, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("%s: the dry run's streams (-) are not the scavenge's (+):\n%s", engine, diff)
		}
		o.Reads = streamVersions(t, st, "t1", "order-1")
		if err := st.CheckInvariants(ctx); err != nil {
			t.Errorf("%s: after the scavenge: %v", engine, err)
		}
		findings, err := st.Diagnose(ctx, store.DiagnoseOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range findings {
			if f.Severity == store.SeverityProblem {
				t.Errorf("%s: doctor after the scavenge: %s %v: %s", engine, f.Kind, f.IDs, f.Detail)
			}
		}
		return o
	}
	lite := run("SQLite", path)
	pg := run("PostgreSQL", target)
	t.Logf("SQLite: %+v", lite)
	t.Logf("PostgreSQL: %+v", pg)
	// Versions 1-3 go; the tombstone (4) and the restored event stay.
	want := []lifecycle.ScavengedStream{{Tenant: "t1", Stream: "order-1", From: 1, To: 3, Count: 3}}
	if diff := cmp.Diff(want, lite.Done); diff != "" {
		t.Errorf("SQLite removed (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(lite, pg, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("SQLite (-) and PostgreSQL (+) differ:\n%s", diff)
	}
}
