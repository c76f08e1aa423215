package store_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/storetest"
)

// TestConcurrentUpdatesIsolated: Update closures that run together (they
// may share a transaction, each under its own savepoint) commit or roll
// back one by one: an error or a panic in one undoes only its own writes,
// the panic comes back in its own caller, appends beside them land.
func TestConcurrentUpdatesIsolated(t *testing.T) {
	ctx := context.Background()
	s := storetest.MustOpen(t, nil)
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
					_, results[i] = s.Append(ctx, "default", key, store.NoStream, ev(t, "t", i))
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
