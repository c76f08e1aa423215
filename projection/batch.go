package projection

import (
	"context"
	"fmt"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/store"
)

// EventError names the event of a batch that Apply failed (or panicked)
// on.
type EventError struct {
	Projection string
	Position   int64
	EventID    string
	Type       string
	Err        error
}

func (e *EventError) Error() string {
	return fmt.Sprintf("projection %s failed on position %d (event %s, type %s): %v", e.Projection, e.Position, e.EventID, e.Type, e.Err)
}

// Unwrap returns the handler's error.
func (e *EventError) Unwrap() error { return e.Err }

// applyBatchTx applies events (in position order) with the tables named
// by names, inside tx, in one nested scope (tx.Nested): with ApplyBatch when the
// projection has one, else as applyEventsTx does. On error (or panic)
// every write of the batch is undone and the transaction stays usable.
func (p *Projection) applyBatchTx(ctx context.Context, tx *store.Tx, names map[string]string, events []envelope.Event) error {
	if p.ApplyBatch == nil {
		return p.applyEventsTx(ctx, tx, names, events)
	}
	if len(events) == 0 {
		return nil
	}
	return tx.Nested(ctx, func() (err error) {
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("projection %s panicked on the batch at positions %d-%d: %v", p.Name, events[0].Position, events[len(events)-1].Position, r)
			}
		}()
		return p.ApplyBatch(ctx, &Tx{tx: tx, tables: names}, events)
	})
}

// applyEventsTx applies events one by one with Apply, inside tx, in one
// nested scope (not one per event, as applyTx has: the batch stands or
// falls as a whole). An error is an *EventError naming the event; every
// write of the batch is then undone.
func (p *Projection) applyEventsTx(ctx context.Context, tx *store.Tx, names map[string]string, events []envelope.Event) error {
	if len(events) == 0 {
		return nil
	}
	ptx := &Tx{tx: tx, tables: names}
	return tx.Nested(ctx, func() error {
		for _, e := range events {
			if err := p.applyOne(ctx, ptx, e); err != nil {
				return &EventError{Projection: p.Name, Position: e.Position, EventID: e.ID, Type: e.Type, Err: err}
			}
		}
		return nil
	})
}

func (p *Projection) applyOne(ctx context.Context, tx *Tx, e envelope.Event) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	return p.apply(ctx, tx, e)
}
