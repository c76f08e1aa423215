package drivertest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/store"
	"github.com/google/go-cmp/cmp"
)

// EventByID finds an event by tenant and id, and nothing in another tenant.
func testEventByID(t *testing.T, h Harness) {
	ctx := context.Background()
	s := h.Open(t, nil)
	if _, err := s.Append(ctx, "a", "s", store.Any, EventWithID(t, "id-1", "x", 1), EventWithID(t, "id-2", "y", 2)); err != nil {
		t.Fatal(err)
	}
	e, err := s.EventByID(ctx, "a", "id-2")
	if err != nil || e.Type != "y" || e.StreamVersion != 2 || e.Stream != "s" {
		t.Fatalf("EventByID: %+v, %v", e, err)
	}
	if _, err := s.EventByID(ctx, "b", "id-2"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("another tenant: %v, want ErrNotFound", err)
	}
}

// ReadAll filters by stream prefix and correlation id, and reads backward
// from a position or from the head.
func testReadAllFilters(t *testing.T, h Harness) {
	ctx := context.Background()
	s := h.Open(t, nil)
	corr := func(e envelope.Event, c string) envelope.Event { e.CorrelationID = c; return e }
	for _, a := range []struct {
		tenant, stream, corr string
	}{{"a", "order-1", "c1"}, {"a", "cart-1", "c1"}, {"b", "order-1", "c1"}, {"a", "order-2", "c2"}, {"a", "ordex", ""}, {"a", "order-1", "c1"}} {
		if _, err := s.Append(ctx, a.tenant, a.stream, store.Any, corr(Event(t, "x", 0), a.corr)); err != nil {
			t.Fatal(err)
		}
	}
	read := func(o store.ReadAllOptions) []int64 {
		var out []int64
		for e, err := range s.ReadAll(ctx, o) {
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, e.Position)
		}
		return out
	}
	tests := []struct {
		name string
		opts store.ReadAllOptions
		want []int64
	}{
		{"prefix", store.ReadAllOptions{Tenant: "a", StreamPrefix: "order-"}, []int64{1, 4, 6}},
		{"correlation", store.ReadAllOptions{Tenant: "a", CorrelationID: "c1"}, []int64{1, 2, 6}},
		{"correlation every tenant", store.ReadAllOptions{CorrelationID: "c1", From: 2}, []int64{2, 3, 6}},
		{"backward from the head", store.ReadAllOptions{Tenant: "a", Backward: true, Limit: 3}, []int64{6, 5, 4}},
		{"backward from 3", store.ReadAllOptions{Backward: true, From: 3}, []int64{3, 2, 1}},
		{"backward with prefix", store.ReadAllOptions{Tenant: "a", StreamPrefix: "order", Backward: true}, []int64{6, 4, 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if d := cmp.Diff(tc.want, read(tc.opts)); d != "" {
				t.Fatalf("positions (-want +got):\n%s", d)
			}
		})
	}
}

// Reads of streams and of the log page by page: streams whose events end
// just before, at and just after a page's end, read forward and backward,
// with and without limits, return every event once, in order, and no
// more than the limit.
func testReadPages(t *testing.T, h Harness) {
	ctx := context.Background()
	s := h.Open(t, nil)
	lens := []int{999, 1000, 1001, 2000}
	var positions []int64
	for _, n := range lens {
		stream := fmt.Sprintf("p-%d", n)
		for v := 0; v < n; v += 500 {
			var evs []envelope.Event
			for range min(500, n-v) {
				evs = append(evs, Event(t, "x", 0))
			}
			res, err := s.Append(ctx, "a", stream, store.Any, evs...)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range res.Events {
				positions = append(positions, e.Position)
			}
		}
	}
	limits := []int{0, 999, 1000, 1001, 1500}
	for _, n := range lens {
		for _, backward := range []bool{false, true} {
			for _, limit := range limits {
				var got []int64
				for e, err := range s.ReadStream(ctx, "a", fmt.Sprintf("p-%d", n), store.ReadStreamOptions{Backward: backward, Limit: limit}) {
					if err != nil {
						t.Fatal(err)
					}
					got = append(got, e.StreamVersion)
				}
				var want []int64
				for v := 1; v <= n; v++ {
					want = append(want, int64(v))
				}
				if backward {
					slices.Reverse(want)
				}
				if limit > 0 && limit < len(want) {
					want = want[:limit]
				}
				if d := cmp.Diff(want, got); d != "" {
					t.Errorf("stream of %d, backward %v, limit %d: versions (-want +got):\n%s", n, backward, limit, d)
				}
			}
		}
	}
	for _, backward := range []bool{false, true} {
		for _, limit := range append(limits, 2000, 2001, len(positions)) {
			var got []int64
			for e, err := range s.ReadAll(ctx, store.ReadAllOptions{Tenant: "a", Backward: backward, Limit: limit}) {
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, e.Position)
			}
			want := slices.Clone(positions)
			if backward {
				slices.Reverse(want)
			}
			if limit > 0 && limit < len(want) {
				want = want[:limit]
			}
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("log, backward %v, limit %d: positions (-want +got):\n%s", backward, limit, d)
			}
		}
	}
}
