package aggregate_test

import (
	"context"
	"errors"
	"fmt"
	"github.com/hashicorp/go-hclog"
	"os"
	"path/filepath"

	"github.com/eventlite/eventlite/aggregate"
	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/store"
)

// The worked domain: an order is placed, paid, its stock reservation is
// rejected, and a compensation cancels it.

// Events.
type OrderPlaced struct {
	Total int `json:"total"`
}
type OrderPaid struct {
	Amount int `json:"amount"`
}
type ReservationRejected struct {
	Reason string `json:"reason"`
}
type ManualReviewRequested struct {
	Reason string `json:"reason"`
}
type OrderCancelled struct {
	// CompensationKey is the order id and the version it compensates.
	CompensationKey string `json:"compensation_key"`
}
type OrderShipped struct{}

// Commands.
type PlaceOrder struct {
	Total int `json:"total"`
}
type PayOrder struct {
	Amount int `json:"amount"`
}
type RecordReservationFailure struct {
	Reason string `json:"reason"`
}
type Compensate struct {
	// RejectedVersion is the version of the ReservationRejected event this
	// compensation answers.
	RejectedVersion int64 `json:"rejected_version"`
}
type ShipOrder struct{}

// Order is the state folded from the events.
type Order struct {
	Status          string `json:"status"` // "", placed, paid, rejected, review, cancelled, shipped
	Total           int    `json:"total"`
	Paid            int    `json:"paid"`
	RejectedVersion int64  `json:"rejected_version"`
	RejectReason    string `json:"reject_reason"`
	CancelKey       string `json:"cancel_key"`
}

// knownRejections are the reservation failures that compensate
// automatically; anything else (a timeout, say) may not have failed at
// all, so a person looks at it.
var knownRejections = map[string]bool{"out_of_stock": true, "discontinued": true}

var (
	ErrNotPlaced = errors.New("order does not exist")
	ErrCancelled = errors.New("order is cancelled")
	ErrNotPaid   = errors.New("order is not paid")
	ErrBadState  = errors.New("command does not fit the order's state")
)

func orderRegistry() *envelope.Registry {
	var r envelope.Registry
	envelope.Register[OrderPlaced](&r, "order.placed")
	envelope.Register[OrderPaid](&r, "order.paid")
	envelope.Register[ReservationRejected](&r, "order.reservation_rejected")
	envelope.Register[ManualReviewRequested](&r, "order.manual_review_requested")
	envelope.Register[OrderCancelled](&r, "order.cancelled")
	envelope.Register[OrderShipped](&r, "order.shipped")
	return &r
}

func evolveOrder(o Order, ev aggregate.Event) Order {
	switch p := ev.Payload.(type) {
	case OrderPlaced:
		o.Status, o.Total = "placed", p.Total
	case OrderPaid:
		o.Status, o.Paid = "paid", o.Paid+p.Amount
	case ReservationRejected:
		o.Status, o.RejectedVersion, o.RejectReason = "rejected", ev.StreamVersion, p.Reason
	case ManualReviewRequested:
		o.Status = "review"
	case OrderCancelled:
		o.Status, o.CancelKey = "cancelled", p.CompensationKey
	case OrderShipped:
		o.Status = "shipped"
	}
	return o
}

func decideOrder(o Order, cmd aggregate.Command) ([]any, error) {
	switch c := cmd.Payload.(type) {
	case PlaceOrder:
		if o.Status != "" {
			return nil, nil // already placed: nothing to do
		}
		return []any{OrderPlaced(c)}, nil
	case PayOrder:
		if o.Status != "placed" {
			return nil, fmt.Errorf("pay: %w (%q)", ErrBadState, o.Status)
		}
		return []any{OrderPaid(c)}, nil
	case RecordReservationFailure:
		if o.Status != "paid" {
			return nil, fmt.Errorf("reservation failure: %w (%q)", ErrBadState, o.Status)
		}
		if !knownRejections[c.Reason] {
			return []any{ManualReviewRequested(c)}, nil
		}
		return []any{ReservationRejected(c)}, nil
	case Compensate:
		key := fmt.Sprintf("%s@%d", cmd.Stream, c.RejectedVersion)
		if o.Status == "cancelled" && o.CancelKey == key {
			return nil, nil // this compensation is already recorded
		}
		if o.Status != "rejected" || o.RejectedVersion != c.RejectedVersion || !knownRejections[o.RejectReason] {
			return nil, fmt.Errorf("compensate version %d: %w (%q)", c.RejectedVersion, ErrBadState, o.Status)
		}
		return []any{OrderCancelled{CompensationKey: key}}, nil
	case ShipOrder:
		switch o.Status {
		case "cancelled":
			return nil, ErrCancelled
		case "paid":
			return []any{OrderShipped{}}, nil
		case "":
			return nil, ErrNotPlaced
		default:
			return nil, fmt.Errorf("ship: %w (%q)", ErrNotPaid, o.Status)
		}
	}
	return nil, fmt.Errorf("unknown command %T", cmd.Payload)
}

func orderDefinition() aggregate.Definition[Order] {
	return aggregate.Definition[Order]{
		Name:     "order",
		Registry: orderRegistry(),
		Evolve:   evolveOrder,
		Decide:   decideOrder,
	}
}

func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "eventlite-example")
	defer os.RemoveAll(dir)
	// Logs go to stderr, quiet unless something needs attention.
	log := hclog.New(&hclog.LoggerOptions{Name: "shop", Level: hclog.Warn})
	s, err := store.Open(ctx, filepath.Join(dir, "orders.db"), &store.Options{Logger: log})
	if err != nil {
		panic(err)
	}
	defer s.Close()
	orders, err := aggregate.New(s, orderDefinition(), nil)
	if err != nil {
		panic(err)
	}
	send := func(opID string, payload any) {
		res, err := orders.Handle(ctx, aggregate.Command{Stream: "order-1", OperationID: opID, Payload: payload})
		switch {
		case err != nil:
			fmt.Printf("%-28T refused: %v\n", payload, err)
		case res.Replayed:
			fmt.Printf("%-28T already done: version %d\n", payload, res.Version)
		default:
			fmt.Printf("%-28T ok: version %d\n", payload, res.Version)
		}
	}
	send("place-1", PlaceOrder{Total: 42})
	send("place-1", PlaceOrder{Total: 42}) // a retry after a lost reply
	send("pay-1", PayOrder{Amount: 42})
	send("reserve-1", RecordReservationFailure{Reason: "out_of_stock"})
	send("order-1@3", Compensate{RejectedVersion: 3}) // the compensation's own key
	send("order-1@3", Compensate{RejectedVersion: 3}) // recorded twice: one cancellation
	send("ship-1", ShipOrder{})
	o, v, _ := orders.Load(ctx, "default", "order-1")
	fmt.Printf("order-1 is %s at version %d\n", o.Status, v)
	// Output:
	// aggregate_test.PlaceOrder    ok: version 1
	// aggregate_test.PlaceOrder    already done: version 1
	// aggregate_test.PayOrder      ok: version 2
	// aggregate_test.RecordReservationFailure ok: version 3
	// aggregate_test.Compensate    ok: version 4
	// aggregate_test.Compensate    already done: version 4
	// aggregate_test.ShipOrder     refused: order is cancelled
	// order-1 is cancelled at version 4
}

// A command carries the version the user was shown. When the stream has
// moved since, it is refused at once with a *store.ConflictError: Decide
// does not run on a state the user never saw.
func ExampleCommand_expected() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "eventlite-example")
	defer os.RemoveAll(dir)
	s, err := store.Open(ctx, filepath.Join(dir, "orders.db"), nil)
	if err != nil {
		panic(err)
	}
	defer s.Close()
	orders, err := aggregate.New(s, orderDefinition(), nil)
	if err != nil {
		panic(err)
	}
	if _, err := orders.Handle(ctx, aggregate.Command{Stream: "order-1", Payload: PlaceOrder{Total: 42}}); err != nil {
		panic(err)
	}
	// A form shows order-1 at version 1; meanwhile, someone pays it.
	if _, err := orders.Handle(ctx, aggregate.Command{Stream: "order-1", Payload: PayOrder{Amount: 42}}); err != nil {
		panic(err)
	}
	// The form's command, decided on version 1:
	_, err = orders.Handle(ctx, aggregate.Command{Stream: "order-1", Expected: store.Exact(1), Payload: PayOrder{Amount: 42}})
	var conflict *store.ConflictError
	if errors.As(err, &conflict) {
		fmt.Printf("refused: the form showed %s, the order is at version %d\n", conflict.Expected, conflict.Actual)
	}
	// Output:
	// refused: the form showed version 1, the order is at version 2
}

// Evolve and Decide written per Go type: each evolver receives its event's
// data as its own type, each decider its command's payload, and returns
// typed events. New refuses a registered event type with no evolver.
func ExampleOn() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "eventlite-example")
	defer os.RemoveAll(dir)
	s, err := store.Open(ctx, filepath.Join(dir, "orders.db"), nil)
	if err != nil {
		panic(err)
	}
	defer s.Close()
	var reg envelope.Registry
	envelope.Register[OrderPlaced](&reg, "order.placed")
	envelope.Register[OrderPaid](&reg, "order.paid")

	var ev aggregate.Evolvers[Order]
	aggregate.On(&ev, func(o Order, e aggregate.EventOf[OrderPlaced]) Order {
		o.Status, o.Total = "placed", e.Payload.Total
		return o
	})
	var dc aggregate.Deciders[Order]
	aggregate.OnCommand(&dc, func(o Order, c aggregate.CommandOf[PlaceOrder]) ([]OrderPlaced, error) {
		return []OrderPlaced{{Total: c.Payload.Total}}, nil
	})
	def := aggregate.Definition[Order]{Name: "order", Registry: &reg, Evolvers: &ev, Deciders: &dc}
	if _, err := aggregate.New(s, def, nil); err != nil {
		fmt.Println(err)
	}

	aggregate.On(&ev, func(o Order, e aggregate.EventOf[OrderPaid]) Order {
		o.Status, o.Paid = "paid", o.Paid+e.Payload.Amount
		return o
	})
	orders, err := aggregate.New(s, def, nil)
	if err != nil {
		panic(err)
	}
	if _, err := orders.Handle(ctx, aggregate.Command{Stream: "order-1", Payload: PlaceOrder{Total: 42}}); err != nil {
		panic(err)
	}
	o, v, _ := orders.Load(ctx, "default", "order-1")
	fmt.Printf("order-1 is %s (%d) at version %d\n", o.Status, o.Total, v)
	// Output:
	// aggregate order: Definition.Evolvers: event type "order.paid" (Go type aggregate_test.OrderPaid) has no evolver: add aggregate.On for aggregate_test.OrderPaid
	// order-1 is placed (42) at version 1
}
