package store_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/storetest"
)

// kvTable makes the table the nested-scope tests write to.
func kvTable(t *testing.T, s *store.Store) {
	t.Helper()
	ctx := context.Background()
	if err := s.Update(ctx, func(tx *store.Tx) error {
		_, err := tx.ExecContext(ctx, `CREATE TABLE kv (k TEXT PRIMARY KEY)`)
		return err
	}); err != nil {
		t.Fatal(err)
	}
}

func put(ctx context.Context, tx *store.Tx, k string) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO kv (k) VALUES (?)`, k)
	return err
}

// keys reads the committed keys, sorted.
func keys(t *testing.T, s *store.Store) []string {
	t.Helper()
	ctx := context.Background()
	var ks []string
	if err := s.View(ctx, func(rt *store.ReadTx) error {
		rows, err := rt.QueryContext(ctx, `SELECT k FROM kv ORDER BY k`)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var k string
			if err := rows.Scan(&k); err != nil {
				return err
			}
			ks = append(ks, k)
		}
		return rows.Err()
	}); err != nil {
		t.Fatal(err)
	}
	return ks
}

// TestNestedBrokenScopeCommitsNothing: when a scope cannot be undone (here
// fn released the store's savepoint itself), the transaction is broken:
// Nested says so, every later statement fails, and the Update returns the
// error even if its closure ignores it: nothing commits, and the store
// goes on.
func TestNestedBrokenScopeCommitsNothing(t *testing.T) {
	ctx := context.Background()
	s := storetest.MustOpen(t, nil)
	kvTable(t, s)
	errBoom := errors.New("boom")
	var nestedErr, laterErr error
	err := s.Update(ctx, func(tx *store.Tx) error {
		if err := put(ctx, tx, "before"); err != nil {
			return err
		}
		nestedErr = tx.Nested(ctx, func() error {
			if err := put(ctx, tx, "scope"); err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, `RELEASE `+store.NestedName(1)); err != nil {
				return err
			}
			return errBoom
		})
		laterErr = put(ctx, tx, "after")
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
	if got := keys(t, s); len(got) != 0 {
		t.Fatalf("committed %v, want nothing", got)
	}
	if err := s.Update(ctx, func(tx *store.Tx) error { return put(ctx, tx, "next") }); err != nil {
		t.Fatal(err)
	}
	if got := keys(t, s); !slices.Equal(got, []string{"next"}) {
		t.Fatalf("committed %v, want [next]", got)
	}
}
