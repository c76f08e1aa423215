package main

import (
	"errors"
	"fmt"

	"github.com/eventlite/eventlite/aggregate"
	"github.com/eventlite/eventlite/envelope"
)

// The demo's small order domain: placed -> paid -> reservation rejected
// -> cancelled by a compensation. (aggregate's Example walks through the
// same domain in more detail.)

type orderPlaced struct {
	Total int `json:"total"`
}
type orderPaid struct {
	Amount int `json:"amount"`
}
type reservationRejected struct {
	Reason string `json:"reason"`
}
type orderCancelled struct {
	CompensationKey string `json:"compensation_key"`
}

type placeOrder struct {
	Total int `json:"total"`
}
type payOrder struct {
	Amount int `json:"amount"`
}
type rejectReservation struct {
	Reason string `json:"reason"`
}
type compensate struct {
	RejectedVersion int64 `json:"rejected_version"`
}

type demoOrder struct {
	Status          string `json:"status"`
	RejectedVersion int64  `json:"rejected_version"`
}

var errDemoState = errors.New("command does not fit the order's state")

func demoOrders() aggregate.Definition[demoOrder] {
	var r envelope.Registry
	envelope.Register[orderPlaced](&r, "order.placed")
	envelope.Register[orderPaid](&r, "order.paid")
	envelope.Register[reservationRejected](&r, "order.reservation_rejected")
	envelope.Register[orderCancelled](&r, "order.cancelled")
	return aggregate.Definition[demoOrder]{
		Name:     "order",
		Registry: &r,
		Source:   "/eventlite-demo/orders",
		Evolve: func(o demoOrder, ev aggregate.Event) demoOrder {
			switch ev.Payload.(type) {
			case orderPlaced:
				o.Status = "placed"
			case orderPaid:
				o.Status = "paid"
			case reservationRejected:
				o.Status, o.RejectedVersion = "rejected", ev.StreamVersion
			case orderCancelled:
				o.Status = "cancelled"
			}
			return o
		},
		Decide: func(o demoOrder, cmd aggregate.Command) ([]any, error) {
			switch c := cmd.Payload.(type) {
			case placeOrder:
				if o.Status != "" {
					return nil, nil
				}
				return []any{orderPlaced(c)}, nil
			case payOrder:
				if o.Status != "placed" {
					return nil, fmt.Errorf("pay: %w (%s)", errDemoState, o.Status)
				}
				return []any{orderPaid(c)}, nil
			case rejectReservation:
				if o.Status != "paid" {
					return nil, fmt.Errorf("reject: %w (%s)", errDemoState, o.Status)
				}
				return []any{reservationRejected(c)}, nil
			case compensate:
				if o.Status == "cancelled" {
					return nil, nil // already compensated: one cancellation
				}
				if o.Status != "rejected" || o.RejectedVersion != c.RejectedVersion {
					return nil, fmt.Errorf("compensate: %w (%s)", errDemoState, o.Status)
				}
				return []any{orderCancelled{CompensationKey: fmt.Sprintf("%s@%d", cmd.Stream, c.RejectedVersion)}}, nil
			}
			return nil, fmt.Errorf("unknown command %T", cmd.Payload)
		},
	}
}
