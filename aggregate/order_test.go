package aggregate_test

import (
	"context"
	"errors"
	"testing"

	"github.com/eventlite/eventlite/aggregate"
	"github.com/eventlite/eventlite/store/storetest"
)

func TestOrderCompensation(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name       string
		reason     string
		wantStatus string
		compensate bool // an automatic compensation is allowed
	}{
		{"known rejection compensates", "out_of_stock", "cancelled", true},
		{"timeout goes to manual review", "timeout", "review", false},
		{"unknown reason goes to manual review", "warehouse said maybe", "review", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := storetest.MustOpen(t, nil)
			h, err := aggregate.New(s, orderDefinition(), nil)
			if err != nil {
				t.Fatal(err)
			}
			send := func(op string, p any) (aggregate.Result, error) {
				return h.Handle(ctx, aggregate.Command{Stream: "o-1", OperationID: op, Payload: p})
			}
			for _, step := range []struct {
				op string
				p  any
			}{{"place", PlaceOrder{Total: 10}}, {"pay", PayOrder{Amount: 10}}, {"reserve", RecordReservationFailure{Reason: tc.reason}}} {
				if _, err := send(step.op, step.p); err != nil {
					t.Fatalf("%s: %v", step.op, err)
				}
			}
			// The compensation's key: order id + the version it compensates.
			r1, err1 := send("o-1@3", Compensate{RejectedVersion: 3})
			r2, err2 := send("o-1@3", Compensate{RejectedVersion: 3})
			// The same compensation decided again under a new operation id
			// (a second worker that never saw the first): still one cancellation.
			r3, err3 := send("other-worker", Compensate{RejectedVersion: 3})
			o, v, err := h.Load(ctx, "default", "o-1")
			if err != nil {
				t.Fatal(err)
			}
			if o.Status != tc.wantStatus {
				t.Errorf("status %q, want %q", o.Status, tc.wantStatus)
			}
			if tc.compensate {
				if err1 != nil || err2 != nil || err3 != nil {
					t.Fatalf("compensations: %v / %v / %v", err1, err2, err3)
				}
				if v != 4 || r1.Version != 4 || !r2.Replayed || r3.Version != 4 || len(r3.Positions) != 0 {
					t.Errorf("want exactly one cancellation at version 4: v=%d r1=%+v r2=%+v r3=%+v", v, r1, r2, r3)
				}
			} else {
				if !errors.Is(err1, ErrBadState) || v != 3 {
					t.Errorf("an ambiguous failure must not cancel automatically: %v, version %d", err1, v)
				}
			}
			_, err = send("ship", ShipOrder{})
			if tc.compensate && !errors.Is(err, ErrCancelled) {
				t.Errorf("shipping a cancelled order: %v", err)
			}
			if !tc.compensate && err == nil {
				t.Error("shipped an order under review")
			}
		})
	}
}
