package drivertest

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/eventlite/eventlite/internal/inside"
	"github.com/eventlite/eventlite/projection"
	"github.com/eventlite/eventlite/store"
)

// testCheckpointsCommitWithTheirTransaction: a checkpoint is written in
// the transaction of the work it records: the transaction reads its own
// write, a rolled-back one leaves the checkpoint where it was, a
// committed one is seen by every reader, another store's included.
func testCheckpointsCommitWithTheirTransaction(t *testing.T, h Harness) {
	ctx := context.Background()
	s := h.Open(t, nil)
	if cp, err := projection.Records(s).Checkpoint(ctx, "p"); err != nil || cp != 0 {
		t.Fatalf("checkpoint of a projection never run: %d, %v; want 0", cp, err)
	}
	set := func(name string, pos int64, fail error) error {
		return s.Update(ctx, func(tx *store.Tx) error {
			if err := store.Bookkeeping(inside.Key{}, tx).SetCheckpoint(ctx, name, pos, nil); err != nil {
				return err
			}
			if got, err := store.Bookkeeping(inside.Key{}, tx).Checkpoint(ctx, name); err != nil || got != pos {
				t.Errorf("the transaction reads %d, %v after setting %d", got, err, pos)
			}
			return fail
		})
	}
	if err := set("p", 3, nil); err != nil {
		t.Fatal(err)
	}
	if err := set("q", 5, nil); err != nil {
		t.Fatal(err)
	}
	errBoom := errors.New("boom")
	if err := set("p", 9, errBoom); !errors.Is(err, errBoom) {
		t.Fatalf("update: %v, want the closure's error", err)
	}
	if cp, _ := projection.Records(s).Checkpoint(ctx, "p"); cp != 3 {
		t.Errorf("checkpoint %d after a rolled-back update, want 3", cp)
	}
	all, err := projection.Records(s).Checkpoints(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]int64{"p": 3, "q": 5}, all); diff != "" {
		t.Errorf("checkpoints (-want +got):\n%s", diff)
	}
	other := h.reopen(t, s, nil)
	if cp, err := projection.Records(other).Checkpoint(ctx, "p"); err != nil || cp != 3 {
		t.Errorf("another store reads checkpoint %d, %v; want 3", cp, err)
	}
}
