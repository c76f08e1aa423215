package store_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/lifecycle"
	"github.com/eventlite/eventlite/store/storetest"
)

// TestStatsKeptAcrossStores: a store keeps a tenant's counts while a
// second store on the same file or schema (another process, as the CLI
// beside `eventlite serve`) truncates and deletes streams and appends.
// The first store's next Stats must equal a fresh count: the removals
// move the file's generation, which its kept counts are compared with,
// not anything in the first store's memory.
func TestStatsKeptAcrossStores(t *testing.T) {
	engines := []struct {
		name string
		addr func(t *testing.T) string
	}{
		{"sqlite", func(t *testing.T) string { return filepath.Join(t.TempDir(), "s.db") }},
		{"postgres", func(t *testing.T) string { return storetest.PostgresSchema(t, storetest.PostgresBase(t)) }},
	}
	for _, eng := range engines {
		t.Run(eng.name, func(t *testing.T) {
			ctx := context.Background()
			appendEvents := func(t *testing.T, s *store.Store, tenant, stream string, n int) {
				t.Helper()
				evs := make([]envelope.Event, n)
				for i := range evs {
					evs[i] = envelope.Event{Source: "/stats-two-stores", Type: "order.noted", Data: []byte(`{}`)}
				}
				if _, err := s.Append(ctx, tenant, stream, store.Any, evs...); err != nil {
					t.Fatal(err)
				}
			}
			addr := eng.addr(t)
			kept := storetest.MustOpenPath(t, addr, nil)
			other := storetest.MustOpenPath(t, addr, nil)
			appendEvents(t, kept, "acme", "a", 6)
			appendEvents(t, kept, "acme", "b", 4)
			if _, err := kept.Inventory().Stats(ctx, "acme"); err != nil {
				t.Fatal(err)
			}
			if _, err := lifecycle.For(other).Truncate(ctx, "acme", "a", 4, store.Any); err != nil {
				t.Fatal(err)
			}
			if _, err := lifecycle.For(other).Delete(ctx, "acme", "b", lifecycle.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			appendEvents(t, other, "acme", "c", 2)
			got, err := kept.Inventory().Stats(ctx, "acme")
			if err != nil {
				t.Fatal(err)
			}
			fresh := storetest.MustOpenPath(t, addr, nil)
			want, err := fresh.Inventory().Stats(ctx, "acme")
			if err != nil {
				t.Fatal(err)
			}
			if got.Events != want.Events || got.Streams != want.Streams || got.LastPosition != want.LastPosition {
				t.Errorf("the store that kept counts says %d events in %d streams (last %d); a fresh count says %d in %d (last %d)",
					got.Events, got.Streams, got.LastPosition, want.Events, want.Streams, want.LastPosition)
			}
			if want.Events != 6 || want.Streams != 2 {
				t.Errorf("fresh count: %d events in %d streams, want 6 in 2 (a's versions 4-6 and its truncation event, c's two)", want.Events, want.Streams)
			}
		})
	}
}
