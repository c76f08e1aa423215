package projection_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/projection"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/drivertest"
	"github.com/eventlite/eventlite/store/storetest"
)

// TestFailedHandlerWritesUndone: a handler that writes and then fails has
// its writes undone, those of that attempt only: the batch attempt's
// writes of the events before the failing one, each failed retry's, and
// the skipped event's are gone; every other event is applied exactly
// once in the same transaction, which stays usable.
func TestFailedHandlerWritesUndone(t *testing.T) {
	ctx := context.Background()
	s := storetest.MustOpen(t, nil)
	appendN(t, s, "a", 10)
	var mu sync.Mutex
	calls := map[int64]int{}
	p := countingProjection("undone", nil)
	write := p.Apply
	p.Apply = func(ctx context.Context, tx *projection.Tx, e envelope.Event) error {
		if err := write(ctx, tx, e); err != nil { // write first, then fail
			return err
		}
		mu.Lock()
		calls[e.Position]++
		n := calls[e.Position]
		mu.Unlock()
		switch {
		case e.Position == 4:
			return errors.New("always fails, after writing")
		case e.Position == 6 && n <= 2:
			return fmt.Errorf("fails on attempt %d, after writing", n)
		}
		return nil
	}
	r, err := projection.NewRunner(s, p, &projection.RunnerOptions{OnError: projection.Skip, MaxAttempts: 3})
	if err != nil {
		t.Fatal(err)
	}
	if cp, err := r.CatchUp(ctx); err != nil || cp != 10 {
		t.Fatalf("CatchUp = %d, %v", cp, err)
	}
	if calls[6] != 3 {
		t.Fatalf("position 6 tried %d times, want 3 (two failures, then applied)", calls[6])
	}
	checkExactlyOnce(t, s, "undone_applied", 10, map[int64]bool{4: true})
}

// TestConsumerQuarantineUndoesHandlerWrites: a consumer's handler that
// writes and then finds the event uninterpretable has its writes undone,
// while the quarantine entry and the inbox row commit in the same
// transaction.
func TestConsumerQuarantineUndoesHandlerWrites(t *testing.T) {
	ctx := context.Background()
	s := storetest.MustOpen(t, nil)
	if err := s.Update(ctx, func(tx *store.Tx) error {
		_, err := tx.ExecContext(ctx, `CREATE TABLE seen (id TEXT PRIMARY KEY)`)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	c, err := projection.NewConsumer(s, projection.ConsumerOptions{Name: "half", Apply: func(ctx context.Context, tx *store.Tx, e envelope.Event) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO seen (id) VALUES (?)`, e.ID); err != nil {
			return err
		}
		if e.Type != "order.placed" {
			return fmt.Errorf("%w: type %q", projection.ErrUninterpretable, e.Type)
		}
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	drivertest.HandleWant(t, c, drivertest.OrderEvent("h1", "order-h", 1, "order.placed"), projection.Applied)
	drivertest.HandleWant(t, c, drivertest.OrderEvent("h2", "order-h", 2, "order.teleported"), projection.Quarantined)
	drivertest.HandleWant(t, c, drivertest.OrderEvent("h2", "order-h", 2, "order.teleported"), projection.Duplicate)
	for id, want := range map[string]bool{"h1": true, "h2": false} {
		var got string
		err := s.View(ctx, func(rt *store.ReadTx) error {
			return rt.QueryRowContext(ctx, `SELECT id FROM seen WHERE id = ?`, id).Scan(&got)
		})
		if (err == nil) != want || err != nil && !errors.Is(err, sql.ErrNoRows) {
			t.Errorf("row %s: %v, want present %v", id, err, want)
		}
	}
	q, _ := projection.Quarantine(s).Events(ctx, projection.QuarantineFilter{Consumer: "half", Open: true})
	if len(q) != 1 || q[0].EventID != "h2" {
		t.Errorf("quarantine %+v", q)
	}
}
