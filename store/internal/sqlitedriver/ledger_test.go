package sqlitedriver_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/internal/driver"
	"github.com/eventlite/eventlite/store/internal/sqlitedriver"
	"github.com/google/go-cmp/cmp"
)

// openTx creates a store file (the store applies the schema), then opens
// a write transaction on it directly, as the store's writer would hold.
func openTx(t *testing.T) *sql.Tx {
	t.Helper()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "events.db")
	s, err := store.Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", "file:"+path+"?_txlock=immediate")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tx.Rollback() })
	return tx
}

// TestAcquireLease pins the lease's states: a new resource starts at
// token 1, its owner renews it without a new token, another owner is told
// who holds it, and a released lease is taken with the next token.
func TestAcquireLease(t *testing.T) {
	ctx := context.Background()
	tx := openTx(t)
	ex := sqlitedriver.Exec{}
	g, err := ex.AcquireLease(ctx, tx, "relay", "a", 60_000)
	if err != nil || g.Held || g.Token != 1 || g.ExpiresAt-g.Now != 60_000 {
		t.Fatalf("first acquire = %+v, %v", g, err)
	}
	if g, err = ex.AcquireLease(ctx, tx, "relay", "a", 30_000); err != nil || g.Held || g.Token != 1 {
		t.Fatalf("owner's own acquire = %+v, %v", g, err)
	}
	if g, err = ex.AcquireLease(ctx, tx, "relay", "b", 60_000); err != nil || !g.Held || g.Owner != "a" || g.Token != 1 {
		t.Fatalf("another owner's acquire = %+v, %v", g, err)
	}
	a := driver.Fence{Resource: "relay", Owner: "a", Token: 1}
	if ok, err := ex.CheckFence(ctx, tx, a); err != nil || !ok {
		t.Fatalf("CheckFence of the holder = %v, %v", ok, err)
	}
	if err := ex.ReleaseLease(ctx, tx, a); err != nil {
		t.Fatal(err)
	}
	if ok, err := ex.CheckFence(ctx, tx, a); err != nil || ok {
		t.Fatalf("CheckFence after release = %v, %v", ok, err)
	}
	if _, ok, err := ex.RenewLease(ctx, tx, a, 60_000); err != nil || ok {
		t.Fatalf("RenewLease after release: ok %v, %v", ok, err)
	}
	if g, err = ex.AcquireLease(ctx, tx, "relay", "b", 60_000); err != nil || g.Held || g.Token != 2 || g.Owner != "b" {
		t.Fatalf("acquire after release = %+v, %v", g, err)
	}
}

// TestSetCheckpointFenced: a stale fence writes nothing.
func TestSetCheckpointFenced(t *testing.T) {
	ctx := context.Background()
	tx := openTx(t)
	ex := sqlitedriver.Exec{}
	stale := &driver.Fence{Resource: "projection:p", Owner: "a", Token: 7}
	if ok, err := ex.SetCheckpoint(ctx, tx, "p", 10, stale, 1); err != nil || ok {
		t.Fatalf("SetCheckpoint with a stale fence = %v, %v", ok, err)
	}
	if cp, err := ex.Checkpoint(ctx, tx, "p"); err != nil || cp != 0 {
		t.Fatalf("checkpoint after a stale fence = %d, %v", cp, err)
	}
	g, err := ex.AcquireLease(ctx, tx, "projection:p", "a", 60_000)
	if err != nil {
		t.Fatal(err)
	}
	live := &driver.Fence{Resource: "projection:p", Owner: "a", Token: g.Token}
	if ok, err := ex.SetCheckpoint(ctx, tx, "p", 10, live, 1); err != nil || !ok {
		t.Fatalf("SetCheckpoint with the live fence = %v, %v", ok, err)
	}
	if cp, err := ex.Checkpoint(ctx, tx, "p"); err != nil || cp != 10 {
		t.Fatalf("checkpoint = %d, %v", cp, err)
	}
}

// TestDeferAndTake: a second event at a deferred version is not stored
// and sees the first; taking an event removes it, so a second take finds
// nothing.
func TestDeferAndTake(t *testing.T) {
	ctx := context.Background()
	tx := openTx(t)
	ex := sqlitedriver.Exec{}
	k := driver.AggregateKey{Tenant: "t", Consumer: "c", Subject: "s"}
	first := driver.DeferredRow{AggregateKey: k, Version: 3, EventID: "e1", Event: []byte(`{}`), Expected: 2, FirstSeen: 100, Reason: "gap"}
	if _, clash, err := ex.Defer(ctx, tx, first); err != nil || clash {
		t.Fatalf("first Defer: clash %v, %v", clash, err)
	}
	second := first
	second.EventID = "e2"
	existing, clash, err := ex.Defer(ctx, tx, second)
	if err != nil || !clash {
		t.Fatalf("second Defer: clash %v, %v", clash, err)
	}
	if diff := cmp.Diff(first, existing); diff != "" {
		t.Fatalf("event in the way (-want +got):\n%s", diff)
	}
	got, ok, err := ex.TakeDeferred(ctx, tx, k, 3)
	if err != nil || !ok {
		t.Fatalf("TakeDeferred: ok %v, %v", ok, err)
	}
	if diff := cmp.Diff(first, got); diff != "" {
		t.Fatalf("taken (-want +got):\n%s", diff)
	}
	if _, ok, err := ex.TakeDeferred(ctx, tx, k, 3); err != nil || ok {
		t.Fatalf("second TakeDeferred: ok %v, %v", ok, err)
	}
}
