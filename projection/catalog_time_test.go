package projection_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/projection"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/storetest"
)

// The catalog keeps a stream's first and last times exactly, for every
// instant RFC 3339 can write, through both Apply and ApplyBatch.
func TestCatalogExtremeTimes(t *testing.T) {
	times := []string{"0001-01-01T00:00:00Z", "0001-01-01T00:00:00.000000001Z", "1677-09-21T00:00:00Z",
		"2026-05-01T00:00:00.5Z", "2262-04-12T00:00:00Z", "9999-12-31T23:59:59.999999999Z"}
	for _, batch := range []int{1, 100} {
		t.Run(fmt.Sprintf("batch=%d", batch), func(t *testing.T) {
			ctx := context.Background()
			s := storetest.MustOpen(t, nil)
			for i, first := range times {
				last := times[len(times)-1-i]
				for _, ts := range []string{first, "2026-01-01T00:00:00Z", last} {
					tm, err := time.Parse(time.RFC3339Nano, ts)
					if err != nil {
						t.Fatal(err)
					}
					e, _ := envelope.New("t", nil)
					e.Source, e.Time, e.TimeSet = "/test", tm, tm.IsZero()
					if _, err := s.Append(ctx, "default", fmt.Sprintf("s-%d", i), store.Any, e); err != nil {
						t.Fatal(err)
					}
				}
			}
			r, err := projection.NewRunner(s, projection.Catalog(), &projection.RunnerOptions{BatchSize: batch})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := r.CatchUp(ctx); err != nil {
				t.Fatal(err)
			}
			got := readCatalog(t, s, "")
			if len(got) != len(times) {
				t.Fatalf("%d catalog rows, want %d", len(got), len(times))
			}
			for i, c := range got {
				first, last := times[i], times[len(times)-1-i]
				if f, l := c.FirstTime.Format(time.RFC3339Nano), c.LastTime.Format(time.RFC3339Nano); f != first || l != last {
					t.Errorf("%s: first %s last %s, want %s %s", c.Stream, f, l, first, last)
				}
			}
		})
	}
}
