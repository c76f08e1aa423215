package store_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/storetest"
)

// A tenant's page of the log, forward and newest first, with and without
// a type filter, is the tenant's events of the whole log in order, read
// page by page: for a tenant with most of the log's events (its pages
// walk a window of positions) and for one with a few events at both ends
// of 9,000 others' (its windows come back short and the read goes
// through the tenant's index instead), on both engines.
func TestTenantPagesBothDirections(t *testing.T) {
	for _, eng := range []string{"sqlite", "postgres"} {
		t.Run(eng, func(t *testing.T) {
			var s *store.Store
			if eng == "sqlite" {
				s = storetest.MustOpen(t, nil)
			} else {
				var err error
				s, err = store.Open(context.Background(), storetest.PostgresSchema(t, storetest.PostgresBase(t)), nil)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = s.Close() })
			}
			ctx := context.Background()
			app := func(tenant string, n int, typ string) {
				for i := 0; i < n; i += 100 {
					evs := make([]envelope.Event, min(100, n-i))
					for j := range evs {
						evs[j] = envelope.Event{Source: "/t", Type: typ, Data: []byte(`{}`)}
						if j%3 == 0 {
							evs[j].Type = typ + ".third"
						}
					}
					if _, err := s.Append(ctx, tenant, fmt.Sprintf("%s-%d", tenant, i%7), store.Any, evs...); err != nil {
						t.Fatal(err)
					}
				}
			}
			app("sparse", 30, "s")
			app("dense", 4500, "d")
			app("sparse", 3, "s")
			app("dense", 4500, "d")
			app("sparse", 5, "s")
			var all []envelope.Event
			for e, err := range s.ReadAll(ctx, store.ReadAllOptions{}) {
				if err != nil {
					t.Fatal(err)
				}
				all = append(all, e)
			}
			for _, tenant := range []string{"dense", "sparse"} {
				for _, types := range [][]string{nil, {tenant[:1] + ".third"}} {
					var want []int64
					for _, e := range all {
						if e.Tenant == tenant && (types == nil || e.Type == types[0]) {
							want = append(want, e.Position)
						}
					}
					for _, backward := range []bool{false, true} {
						w := slices.Clone(want)
						if backward {
							slices.Reverse(w)
						}
						limits := []int{1, 20, 0}
						if tenant == "dense" {
							limits = []int{250, 0} // pages of 20 would be 450 reads
						}
						for _, limit := range limits {
							var got []int64
							from := int64(0)
							for {
								n := 0
								for e, err := range s.ReadAll(ctx, store.ReadAllOptions{Tenant: tenant, Types: types, Backward: backward, From: from, Limit: limit}) {
									if err != nil {
										t.Fatal(err)
									}
									got = append(got, e.Position)
									n++
								}
								if limit == 0 || n < limit || len(got) > len(w) {
									break
								}
								from = got[len(got)-1] + 1
								if backward {
									from = got[len(got)-1] - 1
									if from < 1 {
										break
									}
								}
							}
							if !slices.Equal(got, w) {
								t.Errorf("%s types=%v backward=%v limit=%d: %d positions, want %d (first %v, want %v)",
									tenant, types, backward, limit, len(got), len(w), got[:min(3, len(got))], w[:min(3, len(w))])
							}
						}
					}
				}
			}
		})
	}
}
