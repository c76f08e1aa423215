package store_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/drivertest"
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
	if st, err := s.Inventory().Stats(ctx, ""); err != nil || st.Events != 0 || st.LastPosition != 0 || st.FileBytes == 0 {
		t.Fatalf("empty store: %+v, %v", st, err)
	}
	for i := range 3 { // old: two minutes before the read
		if _, err := s.Append(ctx, "a", "old", store.Any, drivertest.Event(t, "x", i)); err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	now = now.Add(2 * time.Minute)
	mu.Unlock()
	for _, ts := range []struct{ tenant, stream string }{{"a", "new-1"}, {"a", "new-2"}, {"b", "new-1"}, {"a", "new-1"}} {
		if _, err := s.Append(ctx, ts.tenant, ts.stream, store.Any, drivertest.Event(t, "x", 0)); err != nil {
			t.Fatal(err)
		}
	}
	got := map[string]store.Stats{}
	for _, tenant := range []string{"", "a", "b", "c"} {
		st, err := s.Inventory().Stats(ctx, tenant)
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
	if _, err := s.Inventory().Stats(ctx, "bad tenant"); err == nil {
		t.Fatal("an invalid tenant was accepted")
	}
	tenants, err := s.Inventory().Tenants(ctx)
	if err != nil || !cmp.Equal(tenants, []string{"a", "b"}) {
		t.Fatalf("tenants %q, %v", tenants, err)
	}
}
