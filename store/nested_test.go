package store_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/drivertest"
	"github.com/eventlite/eventlite/store/storetest"
)

// TestNestedBrokenScopeCommitsNothing: when a scope cannot be undone (here
// its savepoint was released behind the store's back), the transaction is broken:
// Nested says so, every later statement fails, and the Update returns the
// error even if its closure ignores it: nothing commits, and the store
// goes on.
func TestNestedBrokenScopeCommitsNothing(t *testing.T) {
	ctx := context.Background()
	s := storetest.MustOpen(t, nil)
	drivertest.KVTable(t, s)
	errBoom := errors.New("boom")
	var nestedErr, laterErr error
	err := s.Update(ctx, func(tx *store.Tx) error {
		if err := drivertest.KVPut(ctx, tx, "before"); err != nil {
			return err
		}
		nestedErr = tx.Nested(ctx, func() error {
			if err := drivertest.KVPut(ctx, tx, "scope"); err != nil {
				return err
			}
			if err := store.ReleaseScopeBehind(ctx, tx, 1); err != nil {
				return err
			}
			return errBoom
		})
		laterErr = drivertest.KVPut(ctx, tx, "after")
		return nil // ignores both errors
	})
	if !errors.Is(nestedErr, errBoom) || nestedErr == errBoom {
		t.Fatalf("Nested returned %v, want fn's error joined with the undo's", nestedErr)
	}
	if laterErr == nil {
		t.Fatal("a statement after a broken scope ran")
	}
	if err == nil {
		t.Fatal("Update of a broken transaction returned nil")
	}
	if got := drivertest.KVKeys(t, s); len(got) != 0 {
		t.Fatalf("committed %v, want nothing", got)
	}
	if err := s.Update(ctx, func(tx *store.Tx) error { return drivertest.KVPut(ctx, tx, "next") }); err != nil {
		t.Fatal(err)
	}
	if got := drivertest.KVKeys(t, s); !slices.Equal(got, []string{"next"}) {
		t.Fatalf("committed %v, want [next]", got)
	}
}
