package aggregate_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/eventlite/eventlite/aggregate"
	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/store/storetest"
)

// typedOrderDefinition is orderDefinition written per Go type: one
// evolver per event, one decider per command.
func typedOrderDefinition() aggregate.Definition[Order] {
	var ev aggregate.Evolvers[Order]
	aggregate.On(&ev, func(o Order, e aggregate.EventOf[OrderPlaced]) Order {
		o.Status, o.Total = "placed", e.Payload.Total
		return o
	})
	aggregate.On(&ev, func(o Order, e aggregate.EventOf[OrderPaid]) Order {
		o.Status, o.Paid = "paid", o.Paid+e.Payload.Amount
		return o
	})
	aggregate.On(&ev, func(o Order, e aggregate.EventOf[ReservationRejected]) Order {
		o.Status, o.RejectedVersion, o.RejectReason = "rejected", e.StreamVersion, e.Payload.Reason
		return o
	})
	aggregate.On(&ev, func(o Order, _ aggregate.EventOf[ManualReviewRequested]) Order {
		o.Status = "review"
		return o
	})
	aggregate.On(&ev, func(o Order, e aggregate.EventOf[OrderCancelled]) Order {
		o.Status, o.CancelKey = "cancelled", e.Payload.CompensationKey
		return o
	})
	aggregate.On(&ev, func(o Order, _ aggregate.EventOf[OrderShipped]) Order {
		o.Status = "shipped"
		return o
	})
	var dc aggregate.Deciders[Order]
	aggregate.OnCommand(&dc, func(o Order, c aggregate.CommandOf[PlaceOrder]) ([]OrderPlaced, error) {
		if o.Status != "" {
			return nil, nil
		}
		return []OrderPlaced{OrderPlaced(c.Payload)}, nil
	})
	aggregate.OnCommand(&dc, func(o Order, c aggregate.CommandOf[PayOrder]) ([]OrderPaid, error) {
		if o.Status != "placed" {
			return nil, fmt.Errorf("pay: %w (%q)", ErrBadState, o.Status)
		}
		return []OrderPaid{OrderPaid(c.Payload)}, nil
	})
	aggregate.OnCommand(&dc, func(o Order, c aggregate.CommandOf[RecordReservationFailure]) ([]any, error) {
		if o.Status != "paid" {
			return nil, fmt.Errorf("reservation failure: %w (%q)", ErrBadState, o.Status)
		}
		if !knownRejections[c.Payload.Reason] {
			return []any{ManualReviewRequested(c.Payload)}, nil
		}
		return []any{ReservationRejected(c.Payload)}, nil
	})
	aggregate.OnCommand(&dc, func(o Order, c aggregate.CommandOf[Compensate]) ([]OrderCancelled, error) {
		key := fmt.Sprintf("%s@%d", c.Stream, c.Payload.RejectedVersion)
		if o.Status == "cancelled" && o.CancelKey == key {
			return nil, nil
		}
		if o.Status != "rejected" || o.RejectedVersion != c.Payload.RejectedVersion || !knownRejections[o.RejectReason] {
			return nil, fmt.Errorf("compensate version %d: %w (%q)", c.Payload.RejectedVersion, ErrBadState, o.Status)
		}
		return []OrderCancelled{{CompensationKey: key}}, nil
	})
	aggregate.OnCommand(&dc, func(o Order, _ aggregate.CommandOf[ShipOrder]) ([]OrderShipped, error) {
		switch o.Status {
		case "cancelled":
			return nil, ErrCancelled
		case "paid":
			return []OrderShipped{{}}, nil
		case "":
			return nil, ErrNotPlaced
		}
		return nil, fmt.Errorf("ship: %w (%q)", ErrNotPaid, o.Status)
	})
	return aggregate.Definition[Order]{Name: "order", Registry: orderRegistry(), Evolvers: &ev, Deciders: &dc}
}

// TestTypedMatchesUntyped: the typed definition and the untyped one, fed
// the same commands, give the same results, errors and states, with and
// without snapshots (a snapshot folds the new events through the typed
// evolvers too).
func TestTypedMatchesUntyped(t *testing.T) {
	ctx := context.Background()
	cmds := []aggregate.Command{
		{OperationID: "place-1", Payload: PlaceOrder{Total: 42}},
		{OperationID: "place-1", Payload: PlaceOrder{Total: 42}},
		{Payload: ShipOrder{}},
		{OperationID: "pay-1", Payload: PayOrder{Amount: 42}},
		{Payload: RecordReservationFailure{Reason: "out_of_stock"}},
		{Payload: Compensate{RejectedVersion: 3}},
		{Payload: Compensate{RejectedVersion: 3}},
		{Payload: ShipOrder{}},
	}
	type step struct {
		Version  int64
		Replayed bool
		Err      string
	}
	run := func(def aggregate.Definition[Order], every int) ([]step, Order, int64) {
		def.SnapshotEvery = every
		s := storetest.MustOpen(t, nil)
		h, err := aggregate.New(s, def, nil)
		if err != nil {
			t.Fatal(err)
		}
		var steps []step
		for _, c := range cmds {
			c.Stream = "order-1"
			res, err := h.Handle(ctx, c)
			st := step{Version: res.Version, Replayed: res.Replayed}
			if err != nil {
				st.Err = err.Error()
			}
			steps = append(steps, st)
		}
		o, v, err := h.Load(ctx, "default", "order-1")
		if err != nil {
			t.Fatal(err)
		}
		return steps, o, v
	}
	for _, every := range []int{0, 2} {
		wantSteps, wantState, wantV := run(orderDefinition(), every)
		gotSteps, gotState, gotV := run(typedOrderDefinition(), every)
		if diff := cmp.Diff(wantSteps, gotSteps); diff != "" {
			t.Errorf("SnapshotEvery %d: results (-untyped +typed):\n%s", every, diff)
		}
		if diff := cmp.Diff(wantState, gotState); diff != "" || gotV != wantV {
			t.Errorf("SnapshotEvery %d: state at v%d, want v%d (-untyped +typed):\n%s", every, gotV, wantV, diff)
		}
		if wantState.Status != "cancelled" || wantV != 4 {
			t.Fatalf("the untyped control ended %+v at v%d", wantState, wantV)
		}
	}
}

// TestTypedDefinitionChecked: New refuses, with a *DefinitionError naming
// the field, a registered event type with no evolver (not at load), an
// evolver nothing decodes to, two evolvers or deciders for one type, a
// concrete unregistered decider result, and both forms at once.
func TestTypedDefinitionChecked(t *testing.T) {
	s := storetest.MustOpen(t, nil)
	cases := map[string]struct {
		edit func(*aggregate.Definition[Order])
		want string
	}{
		"event type without evolver": {func(d *aggregate.Definition[Order]) {
			var ev aggregate.Evolvers[Order]
			aggregate.On(&ev, func(o Order, _ aggregate.EventOf[OrderPlaced]) Order { return o })
			d.Evolvers = &ev
		}, `event type "order.paid" (Go type aggregate_test.OrderPaid) has no evolver`},
		"evolver of an unregistered type": {func(d *aggregate.Definition[Order]) {
			aggregate.On(d.Evolvers, func(o Order, _ aggregate.EventOf[Add]) Order { return o })
		}, "the evolver for aggregate_test.Add is never called"},
		"second evolver": {func(d *aggregate.Definition[Order]) {
			aggregate.On(d.Evolvers, func(o Order, _ aggregate.EventOf[OrderPaid]) Order { return o })
		}, "a second evolver for aggregate_test.OrderPaid"},
		"second decider": {func(d *aggregate.Definition[Order]) {
			aggregate.OnCommand(d.Deciders, func(o Order, _ aggregate.CommandOf[PayOrder]) ([]OrderPaid, error) { return nil, nil })
		}, "a second decider for aggregate_test.PayOrder"},
		"unregistered result": {func(d *aggregate.Definition[Order]) {
			aggregate.OnCommand(d.Deciders, func(o Order, _ aggregate.CommandOf[Add]) ([]Added, error) { return nil, nil })
		}, "the decider for aggregate_test.Add returns aggregate_test.Added, which is not registered"},
		"both Evolve and Evolvers": {func(d *aggregate.Definition[Order]) {
			d.Evolve = evolveOrder
		}, "Definition.Evolve: set exactly one of Evolve and Evolvers"},
		"both Decide and Deciders": {func(d *aggregate.Definition[Order]) {
			d.Decide = decideOrder
		}, "Definition.Decide: set exactly one of Decide and Deciders"},
		"no decider": {func(d *aggregate.Definition[Order]) {
			d.Deciders = &aggregate.Deciders[Order]{}
		}, "Definition.Deciders: no decider"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			def := typedOrderDefinition()
			c.edit(&def)
			_, err := aggregate.New(s, def, nil)
			var de *aggregate.DefinitionError
			if !errors.As(err, &de) || de.Aggregate != "order" || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("New: %v, want a *DefinitionError containing %q", err, c.want)
			}
		})
	}
	if _, err := aggregate.New(s, typedOrderDefinition(), nil); err != nil {
		t.Fatalf("the complete typed definition: %v", err)
	}
}

// TestTypedUnknownCommand: a command whose payload has no decider is
// refused with an *envelope.InvalidError naming the payload, and appends
// nothing.
func TestTypedUnknownCommand(t *testing.T) {
	ctx := context.Background()
	s := storetest.MustOpen(t, nil)
	h, err := aggregate.New(s, typedOrderDefinition(), nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = h.Handle(ctx, aggregate.Command{Stream: "order-1", OperationID: "x", Payload: Add{N: 1}})
	var inv *envelope.InvalidError
	if !errors.As(err, &inv) || inv.Field != "payload" || !strings.Contains(inv.Reason, "no decider for aggregate_test.Add") {
		t.Fatalf("Handle: %v, want an *envelope.InvalidError on payload", err)
	}
	if n := streamLen(t, s, "default", "order-1"); n != 0 {
		t.Fatalf("%d events appended", n)
	}
	if _, ok, _ := s.Aggregates().Operation(ctx, "default", "x"); ok {
		t.Fatal("the refused command was recorded in the ledger")
	}
}
