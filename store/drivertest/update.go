package drivertest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/eventlite/eventlite/store"
)

// testConcurrentUpdatesIsolated: Update closures that run together (they
// may share a transaction, each in a scope of its own) commit or roll
// back one by one: an error or a panic in one undoes only its own writes,
// the panic comes back in its own caller, appends beside them land.
func testConcurrentUpdatesIsolated(t *testing.T, h Harness) {
	ctx := context.Background()
	s := h.Open(t, nil)
	if err := s.Update(ctx, func(tx *store.Tx) error {
		_, err := tx.ExecContext(ctx, `CREATE TABLE kv (k TEXT PRIMARY KEY, v INTEGER)`)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	rounds := 20
	if testing.Short() {
		rounds = 4
	}
	errBoom := errors.New("boom")
	for round := range rounds {
		var wg sync.WaitGroup
		results := make([]error, 24)
		panics := make([]any, 24)
		for i := range 24 {
			wg.Go(func() {
				defer func() { panics[i] = recover() }()
				key := fmt.Sprintf("r%d-%d", round, i)
				switch {
				case i%8 == 7: // an append beside the updates
					_, results[i] = s.Append(ctx, "default", key, store.NoStream, Event(t, "t", i))
					return
				}
				results[i] = s.Update(ctx, func(tx *store.Tx) error {
					if _, err := tx.ExecContext(ctx, `INSERT INTO kv (k, v) VALUES (?, ?)`, key, i); err != nil {
						return err
					}
					switch i % 8 {
					case 3:
						return errBoom // written, then refused: rolled back
					case 5:
						panic("closure panicked")
					}
					return nil
				})
			})
		}
		wg.Wait()
		for i := range 24 {
			key := fmt.Sprintf("r%d-%d", round, i)
			var n int
			if err := s.Update(ctx, func(tx *store.Tx) error {
				return tx.QueryRowContext(ctx, `SELECT count(*) FROM kv WHERE k = ?`, key).Scan(&n)
			}); err != nil {
				t.Fatal(err)
			}
			switch i % 8 {
			case 7:
				if results[i] != nil {
					t.Errorf("append beside updates: %v", results[i])
				}
			case 3:
				if !errors.Is(results[i], errBoom) || n != 0 {
					t.Errorf("round %d update %d: err %v, %d rows (want its error and no row)", round, i, results[i], n)
				}
			case 5:
				if panics[i] != "closure panicked" || n != 0 {
					t.Errorf("round %d update %d: panic %v, %d rows", round, i, panics[i], n)
				}
			default:
				if results[i] != nil || panics[i] != nil || n != 1 {
					t.Errorf("round %d update %d: err %v panic %v, %d rows (want 1)", round, i, results[i], panics[i], n)
				}
			}
		}
	}
}

// KVTable makes the table the nested-scope tests write to.
func KVTable(t *testing.T, s *store.Store) {
	t.Helper()
	ctx := context.Background()
	if err := s.Update(ctx, func(tx *store.Tx) error {
		_, err := tx.ExecContext(ctx, `CREATE TABLE kv (k TEXT PRIMARY KEY)`)
		return err
	}); err != nil {
		t.Fatal(err)
	}
}

// KVPut inserts key k into the table KVTable made.
func KVPut(ctx context.Context, tx *store.Tx, k string) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO kv (k) VALUES (?)`, k)
	return err
}

// KVKeys reads the committed keys, sorted.
func KVKeys(t *testing.T, s *store.Store) []string {
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

// testNestedUndoesOnlyItsScope: a scope whose fn fails or panics loses its
// own writes, and only those: the writes before it, after it, of the
// scopes beside it and of the enclosing scope commit, and the transaction
// stays usable. fn's error comes back unchanged.
func testNestedUndoesOnlyItsScope(t *testing.T, h Harness) {
	ctx := context.Background()
	s := h.Open(t, nil)
	KVTable(t, s)
	errBoom := errors.New("boom")
	err := s.Update(ctx, func(tx *store.Tx) error {
		if err := KVPut(ctx, tx, "before"); err != nil {
			return err
		}
		err := tx.Nested(ctx, func() error {
			if err := KVPut(ctx, tx, "failed-scope"); err != nil {
				return err
			}
			return errBoom
		})
		if err != errBoom {
			return fmt.Errorf("tx.Nested returned %v, want fn's error unchanged", err)
		}
		if err := tx.Nested(ctx, func() error { return KVPut(ctx, tx, "kept-scope") }); err != nil {
			return err
		}
		// Scopes nest: the inner one fails, the outer one keeps its own.
		if err := tx.Nested(ctx, func() error {
			if err := KVPut(ctx, tx, "outer"); err != nil {
				return err
			}
			if err := tx.Nested(ctx, func() error {
				if err := KVPut(ctx, tx, "inner"); err != nil {
					return err
				}
				return errBoom
			}); !errors.Is(err, errBoom) {
				return fmt.Errorf("inner Nested returned %v", err)
			}
			return KVPut(ctx, tx, "outer-after")
		}); err != nil {
			return err
		}
		// A panic undoes the scope and comes back here.
		var perr error
		func() {
			defer func() {
				if p := recover(); p != "scope panic" {
					perr = fmt.Errorf("recovered %v, want the scope's panic", p)
				}
			}()
			_ = tx.Nested(ctx, func() error {
				if err := KVPut(ctx, tx, "panicked-scope"); err != nil {
					panic(err)
				}
				panic("scope panic")
			})
		}()
		if perr != nil {
			return perr
		}
		// A scope whose own ctx ended in it is still undone.
		sctx, cancel := context.WithCancel(ctx)
		err = tx.Nested(sctx, func() error {
			if err := KVPut(sctx, tx, "cancelled-scope"); err != nil {
				return err
			}
			cancel()
			return sctx.Err()
		})
		if !errors.Is(err, context.Canceled) {
			return fmt.Errorf("cancelled scope returned %v", err)
		}
		return KVPut(ctx, tx, "after")
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"after", "before", "kept-scope", "outer", "outer-after"}
	if got := KVKeys(t, s); !slices.Equal(got, want) {
		t.Fatalf("committed %v, want %v", got, want)
	}
}

// testNestedCommitsWithItsTransaction: a scope that returned nil keeps
// its writes only as far as its transaction does: an Update that fails
// after it stores none of them.
func testNestedCommitsWithItsTransaction(t *testing.T, h Harness) {
	ctx := context.Background()
	s := h.Open(t, nil)
	KVTable(t, s)
	errLater := errors.New("later")
	err := s.Update(ctx, func(tx *store.Tx) error {
		if err := tx.Nested(ctx, func() error { return KVPut(ctx, tx, "scope") }); err != nil {
			return err
		}
		return errLater
	})
	if !errors.Is(err, errLater) {
		t.Fatalf("Update returned %v", err)
	}
	if got := KVKeys(t, s); len(got) != 0 {
		t.Fatalf("committed %v, want nothing", got)
	}
}

// testNestedInGroupCommit: closures that share one group commit (each
// in a scope of its own) each undo only their failed scope;
// a closure that fails after its scope loses the scope's writes too; the
// others commit.
func testNestedInGroupCommit(t *testing.T, h Harness) {
	ctx := context.Background()
	s := h.Open(t, nil)
	KVTable(t, s)
	errBoom := errors.New("boom")
	const n = 24
	rounds := 10
	if testing.Short() {
		rounds = 3
	}
	for round := range rounds {
		var wg sync.WaitGroup
		errs := make([]error, n)
		for i := range n {
			wg.Go(func() {
				k := fmt.Sprintf("%02d-%02d", round, i)
				errs[i] = s.Update(ctx, func(tx *store.Tx) error {
					if err := tx.Nested(ctx, func() error {
						if err := KVPut(ctx, tx, k+"-drop"); err != nil {
							return err
						}
						return errBoom
					}); !errors.Is(err, errBoom) {
						return fmt.Errorf("nested: %v", err)
					}
					if err := tx.Nested(ctx, func() error { return KVPut(ctx, tx, k+"-keep") }); err != nil {
						return err
					}
					if i%5 == 0 {
						return errBoom // the whole closure fails
					}
					return nil
				})
			})
		}
		wg.Wait()
		for i, err := range errs {
			if (i%5 == 0) != errors.Is(err, errBoom) || i%5 != 0 && err != nil {
				t.Fatalf("round %d closure %d: %v", round, i, err)
			}
		}
	}
	var want []string
	for round := range rounds {
		for i := range n {
			if i%5 != 0 {
				want = append(want, fmt.Sprintf("%02d-%02d-keep", round, i))
			}
		}
	}
	if got := KVKeys(t, s); !slices.Equal(got, want) {
		t.Fatalf("committed %v\nwant %v", got, want)
	}
}

// testNestedOutsideUpdate: a Tx kept past its closure refuses a scope.
func testNestedOutsideUpdate(t *testing.T, h Harness) {
	ctx := context.Background()
	s := h.Open(t, nil)
	var kept *store.Tx
	if err := s.Update(ctx, func(tx *store.Tx) error { kept = tx; return nil }); err != nil {
		t.Fatal(err)
	}
	ran := false
	if err := kept.Nested(ctx, func() error { ran = true; return nil }); err == nil || ran {
		t.Fatalf("Nested after the closure: err %v, ran %v", err, ran)
	}
}

// testNestedDeep: scopes nest past the depths whose statements the store
// builds ahead; the innermost failing undoes only its own write.
func testNestedDeep(t *testing.T, h Harness) {
	ctx := context.Background()
	s := h.Open(t, nil)
	KVTable(t, s)
	errBoom := errors.New("boom")
	const depth = 12
	var scope func(tx *store.Tx, d int) error
	scope = func(tx *store.Tx, d int) error {
		return tx.Nested(ctx, func() error {
			if err := KVPut(ctx, tx, fmt.Sprintf("d%02d", d)); err != nil {
				return err
			}
			if d == depth {
				return errBoom
			}
			err := scope(tx, d+1)
			if d+1 == depth && errors.Is(err, errBoom) {
				return nil // the innermost scope's failure, undone
			}
			return err
		})
	}
	if err := s.Update(ctx, func(tx *store.Tx) error { return scope(tx, 1) }); err != nil {
		t.Fatal(err)
	}
	var want []string
	for d := 1; d < depth; d++ {
		want = append(want, fmt.Sprintf("d%02d", d))
	}
	if got := KVKeys(t, s); !slices.Equal(got, want) {
		t.Fatalf("committed %v, want %v", got, want)
	}
}
