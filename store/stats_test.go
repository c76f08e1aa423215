package store_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/storetest"
)

// Stats counts a tenant's events and streams and only the events recorded
// in the last minute by the store's clock; Tenants lists the tenants.
func TestStatsAndTenants(t *testing.T) {
	ctx := context.Background()
	var mu sync.Mutex
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	s := storetest.MustOpen(t, &store.Options{Now: clock})
	if st, err := s.Stats(ctx, ""); err != nil || st.Events != 0 || st.LastPosition != 0 || st.FileBytes == 0 {
		t.Fatalf("empty store: %+v, %v", st, err)
	}
	for i := range 3 { // old: two minutes before the read
		if _, err := s.Append(ctx, "a", "old", store.Any, ev(t, "x", i)); err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	now = now.Add(2 * time.Minute)
	mu.Unlock()
	for _, ts := range []struct{ tenant, stream string }{{"a", "new-1"}, {"a", "new-2"}, {"b", "new-1"}, {"a", "new-1"}} {
		if _, err := s.Append(ctx, ts.tenant, ts.stream, store.Any, ev(t, "x", 0)); err != nil {
			t.Fatal(err)
		}
	}
	got := map[string]store.Stats{}
	for _, tenant := range []string{"", "a", "b", "c"} {
		st, err := s.Stats(ctx, tenant)
		if err != nil {
			t.Fatal(err)
		}
		st.FileBytes, st.WALBytes = 0, 0
		got[tenant] = st
	}
	want := map[string]store.Stats{
		"":  {Events: 7, Streams: 4, LastPosition: 7, AppendedLastMinute: 4},
		"a": {Events: 6, Streams: 3, LastPosition: 7, AppendedLastMinute: 3},
		"b": {Events: 1, Streams: 1, LastPosition: 6, AppendedLastMinute: 1},
		"c": {},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("stats (-want +got):\n%s", d)
	}
	if _, err := s.Stats(ctx, "bad tenant"); err == nil {
		t.Fatal("an invalid tenant was accepted")
	}
	tenants, err := s.Tenants(ctx)
	if err != nil || !cmp.Equal(tenants, []string{"a", "b"}) {
		t.Fatalf("tenants %q, %v", tenants, err)
	}
}

// EventByID finds an event by tenant and id, and nothing in another tenant.
func TestEventByID(t *testing.T) {
	ctx := context.Background()
	s := storetest.MustOpen(t, nil)
	if _, err := s.Append(ctx, "a", "s", store.Any, evID(t, "id-1", "x", 1), evID(t, "id-2", "y", 2)); err != nil {
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
func TestReadAllFilters(t *testing.T) {
	ctx := context.Background()
	s := storetest.MustOpen(t, nil)
	corr := func(e envelope.Event, c string) envelope.Event { e.CorrelationID = c; return e }
	for _, a := range []struct {
		tenant, stream, corr string
	}{{"a", "order-1", "c1"}, {"a", "cart-1", "c1"}, {"b", "order-1", "c1"}, {"a", "order-2", "c2"}, {"a", "ordex", ""}, {"a", "order-1", "c1"}} {
		if _, err := s.Append(ctx, a.tenant, a.stream, store.Any, corr(ev(t, "x", 0), a.corr)); err != nil {
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
