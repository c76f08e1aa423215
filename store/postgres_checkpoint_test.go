package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/eventlite/eventlite/internal/inside"
	"github.com/eventlite/eventlite/projection"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/storetest"
)

// TestPostgresCheckpointReadTakesNoLock: a checkpoint read on the read
// pool (projection.Records(s).Checkpoint) takes no row lock. It answers on a
// read-only store, and while a write transaction holds the row (as a
// projection batch does between its read of the checkpoint and its
// commit) it answers at once with the committed value instead of
// waiting for that transaction. Inside the transaction tx.Checkpoint
// still locks the row.
func TestPostgresCheckpointReadTakesNoLock(t *testing.T) {
	ctx := context.Background()
	addr := storetest.PostgresSchema(t, storetest.PostgresBase(t))
	// A short busy timeout: a read that waited for the row would fail
	// Busy after it instead of hanging the test.
	s := openAddr(t, addr, &store.Options{BusyTimeout: 2 * time.Second})
	if err := s.Update(ctx, func(tx *store.Tx) error { return store.Bookkeeping(inside.Key{}, tx).SetCheckpoint(ctx, "p", 7, nil) }); err != nil {
		t.Fatal(err)
	}

	ro := openAddr(t, addr, &store.Options{ReadOnly: true})
	if cp, err := projection.Records(ro).Checkpoint(ctx, "p"); err != nil || cp != 7 {
		t.Fatalf("read-only store: checkpoint %d, %v; want 7", cp, err)
	}

	err := s.Update(ctx, func(tx *store.Tx) error {
		if cp, err := store.Bookkeeping(inside.Key{}, tx).Checkpoint(ctx, "p"); err != nil || cp != 7 {
			t.Errorf("tx.Checkpoint = %d, %v; want 7", cp, err)
		}
		if err := store.Bookkeeping(inside.Key{}, tx).SetCheckpoint(ctx, "p", 9, nil); err != nil {
			return err
		}
		cp, err := projection.Records(s).Checkpoint(ctx, "p")
		if err != nil || cp != 7 {
			t.Errorf("read pool, while a transaction holds the row: checkpoint %d, %v; want 7 (the committed value) at once", cp, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if cp, err := projection.Records(ro).Checkpoint(ctx, "p"); err != nil || cp != 9 {
		t.Fatalf("after the commit: checkpoint %d, %v; want 9", cp, err)
	}
}
