package store_test

import (
	"context"
	"testing"

	"github.com/eventlite/eventlite/store"
)

// fillStream appends n events to a stream and returns its version.
func fillStream(t *testing.T, s *store.Store, stream string, n int) int64 {
	t.Helper()
	var v int64
	for i := range n {
		res, err := s.Append(context.Background(), "default", stream, store.Any, ev(t, "t", map[string]int{"i": i}))
		if err != nil {
			t.Fatal(err)
		}
		v = res.Version
	}
	return v
}
