package lifecycle_test

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/internal/inside"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/drivertest"
	"github.com/eventlite/eventlite/store/lifecycle"
	"github.com/eventlite/eventlite/store/storetest"
)

func TestScavengeDryRunChangesNothing(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "eventlite.db")
	s, err := store.Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	drivertest.LifecycleFixture(t, s)
	storetest.PublishAll(t, s)
	if err := lifecycle.For(s).SetRetention(ctx, lifecycle.RetentionPolicy{Prefix: "order-4", MaxCount: 1}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	before := storetest.DirDigest(t, dir)
	s, err = store.Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	res := drivertest.Scavenge(t, s, lifecycle.ScavengeOptions{DryRun: true})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if res.Removed != 11 || len(res.Trims) != 1 || res.Trims[0].Before != 2 {
		t.Fatalf("dry run: would remove %d, trims %+v; want 11 and order-4 before 2", res.Removed, res.Trims)
	}
	after := storetest.DirDigest(t, dir)
	for name, d := range before {
		if after[name] != d {
			t.Errorf("dry run changed %s", name)
		}
	}
	if len(after) != len(before) {
		t.Errorf("dry run left files %v, had %v", after, before)
	}
}

func TestScavengeOverwritesRemovedBytes(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "eventlite.db")
	s := storetest.MustOpenPath(t, path, nil)
	marker := "MARKER-7f3a9c-secret-value"
	if _, err := s.Append(ctx, "default", "user-1", store.NoStream, drivertest.Event(t, "t", map[string]string{"ssn": marker})); err != nil {
		t.Fatal(err)
	}
	drivertest.FillStream(t, s, "user-1", 3)
	drivertest.FillStream(t, s, "other", 50)
	if _, err := lifecycle.For(s).Delete(ctx, "default", "user-1", lifecycle.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	storetest.PublishAll(t, s)
	if !fileContains(t, path, marker) {
		t.Fatal("the marker is not in the file or its WAL before the scavenge: the test proves nothing")
	}
	res := drivertest.Scavenge(t, s, lifecycle.ScavengeOptions{})
	if res.Removed != 4 {
		t.Fatalf("removed %d, want 4", res.Removed)
	}
	if fileContains(t, path, marker) {
		for _, p := range []string{path, path + "-wal"} {
			b, _ := os.ReadFile(p)
			i := bytes.Index(b, []byte(marker))
			t.Logf("%s: size %d, marker at %d (page %d)", p, len(b), i, i/4096+1)
			if i > 0 {
				pg := b[(i/4096)*4096 : (i/4096+1)*4096]
				t.Logf("page header %x", pg[:16])
				t.Logf("around %q", b[max(0, i-300):min(len(b), i+60)])
			}
		}
		t.Logf("%+v", res)
		t.Fatal("the removed event's data is still in the file or its WAL after the scavenge")
	}
}

// fileContains reports whether the database file or its WAL holds s.
// It reads them with os.ReadFile while the store is open: SQLite's
// locks are POSIX locks, so closing this descriptor drops them, but the
// scavenge is done by then and the test only closes the store after.
func fileContains(t *testing.T, path, s string) bool {
	t.Helper()
	found := false
	for _, p := range []string{path, path + "-wal"} {
		b, err := os.ReadFile(p)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		found = found || bytes.Contains(b, []byte(s))
	}
	return found
}

func TestScavengeKeepsTheOperationLedger(t *testing.T) {
	ctx := context.Background()
	s := storetest.MustOpen(t, nil)
	op := store.Operation{Tenant: "default", ID: "op-1", Type: "AddItem", InputHash: "h", Result: []byte(`{"version":1}`)}
	if err := s.Update(ctx, func(tx *store.Tx) error {
		if _, err := tx.Append(ctx, "default", "cart-9", store.NoStream, drivertest.Event(t, "t", nil)); err != nil {
			return err
		}
		_, err := store.Bookkeeping(inside.Key{}, tx).RecordOperation(ctx, op)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	drivertest.FillStream(t, s, "cart-9", 1)
	if _, err := lifecycle.For(s).Delete(ctx, "default", "cart-9", lifecycle.DeleteOptions{Hard: true}); err != nil {
		t.Fatal(err)
	}
	storetest.PublishAll(t, s)
	if res := drivertest.Scavenge(t, s, lifecycle.ScavengeOptions{}); res.Removed != 2 {
		t.Fatalf("removed %d, want 2", res.Removed)
	}
	got, ok, err := s.Aggregates().Operation(ctx, "default", "op-1")
	if err != nil || !ok || string(got.Result) != `{"version":1}` {
		t.Fatalf("ledger row after scavenge: %+v %v %v", got, ok, err)
	}
}

var _ = envelope.New

func TestScavengeCheckpointBlockedByAReader(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "eventlite.db")
	s := storetest.MustOpenPath(t, path, &store.Options{BusyTimeout: 50 * time.Millisecond})
	drivertest.LifecycleFixture(t, s)
	storetest.PublishAll(t, s)
	// A reader in another connection holds a snapshot of the WAL.
	db, err := sql.Open("sqlite", "file:"+filepath.ToSlash(path))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM events`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	res, err := lifecycle.For(s).Scavenge(ctx, lifecycle.ScavengeOptions{})
	if !errors.Is(err, lifecycle.ErrCheckpointBlocked) || res.Removed != 10 {
		t.Fatalf("scavenge with a reader: removed %d, %v; want 10 and ErrCheckpointBlocked", res.Removed, err)
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	if res := drivertest.Scavenge(t, s, lifecycle.ScavengeOptions{}); res.Removed != 0 {
		t.Fatalf("again: removed %d", res.Removed)
	}
}

// Positions come from the highest stored row or the floor a scavenge
// raised, whichever is higher: a scavenge records the head before it
// removes events, so even with the newest rows of the log gone (a
// scavenge keeps each stream's newest event, so here they go behind the
// store's back after it) and after a full VACUUM and a restart, the next
// position is above every one handed out, the removed ones included.
func TestPositionsNeverGoBack(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "eventlite.db")
	s, err := store.Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	drivertest.FillStream(t, s, "a", 5) // positions 1-5
	drivertest.FillStream(t, s, "b", 5) // 6-10
	if _, err := lifecycle.For(s).Truncate(ctx, "default", "b", 3, store.Any); err != nil {
		t.Fatal(err) // its event: 11
	}
	head, _ := s.Head(ctx)
	storetest.PublishAll(t, s)
	res, err := lifecycle.For(s).Scavenge(ctx, lifecycle.ScavengeOptions{Vacuum: true})
	if err != nil {
		t.Fatal(err)
	}
	if want := []lifecycle.PositionRange{{From: 6, To: 7}}; !reflect.DeepEqual(res.Ranges, want) {
		t.Fatalf("scavenge removed %v, want %v", res.Ranges, want)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// Remove the rest of stream b, the newest events of the log, behind
	// the store's back: the head falls to 5, below the removed 6-7.
	storetest.RawExec(t, path,
		`DELETE FROM outbox WHERE position IN (SELECT position FROM events WHERE stream_id = 'b')`,
		`DELETE FROM events WHERE stream_id = 'b'`,
		`DELETE FROM streams WHERE stream_id = 'b'`)
	s, err = store.Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	r, err := s.Append(ctx, "default", "c", store.NoStream, drivertest.Event(t, "t", nil))
	if err != nil {
		t.Fatal(err)
	}
	if p := r.Events[0].Position; p != head+1 {
		t.Fatalf("position after the newest rows were removed: %d, want %d", p, head+1)
	}
}

// A file created before eventlite set auto_vacuum keeps its free pages
// after a scavenge, says so (FreePages), and a scavenge with Vacuum gives
// them back and converts the file, so that later scavenges shrink it.
func TestScavengeVacuumConvertsAnOlderFile(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "eventlite.db")
	s, err := store.Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	storetest.RawExec(t, path, "PRAGMA auto_vacuum = NONE", "VACUUM")
	s = storetest.MustOpenPath(t, path, nil)
	for i := range 20 {
		drivertest.FillStream(t, s, fmt.Sprintf("old-%d", i), 30)
		if _, err := lifecycle.For(s).Delete(ctx, "default", fmt.Sprintf("old-%d", i), lifecycle.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	storetest.PublishAll(t, s)
	res := drivertest.Scavenge(t, s, lifecycle.ScavengeOptions{})
	if res.Removed != 20*30 || res.FreePages == 0 {
		t.Fatalf("older file: removed %d, %d free pages; want 600 and free pages kept", res.Removed, res.FreePages)
	}
	res = drivertest.Scavenge(t, s, lifecycle.ScavengeOptions{Vacuum: true})
	if res.FreePages != 0 || res.BytesReclaimed <= 0 {
		t.Fatalf("with Vacuum: %d free pages, %d bytes reclaimed", res.FreePages, res.BytesReclaimed)
	}
	// Converted: the next scavenge gives its pages back by itself.
	for i := range 20 {
		drivertest.FillStream(t, s, fmt.Sprintf("new-%d", i), 30)
		if _, err := lifecycle.For(s).Delete(ctx, "default", fmt.Sprintf("new-%d", i), lifecycle.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	storetest.PublishAll(t, s)
	if res := drivertest.Scavenge(t, s, lifecycle.ScavengeOptions{}); res.Removed != 600 || res.FreePages != 0 {
		t.Fatalf("after the conversion: removed %d, %d free pages left", res.Removed, res.FreePages)
	}
}
