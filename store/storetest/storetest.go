// Package storetest opens real stores for tests and checks the log's
// invariants after every test that uses them.
package storetest

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/eventlite/eventlite/store"
)

// MustOpen opens a store on a new file in tb's temp dir, with
// synchronous=NORMAL unless opts says otherwise (tests that are not about
// durability need not pay for fsync). When the test ends it checks the
// store's invariants (store.CheckInvariants) and closes it: a test that
// leaves a broken log fails.
func MustOpen(tb testing.TB, opts *store.Options) *store.Store {
	tb.Helper()
	return MustOpenPath(tb, filepath.Join(tb.TempDir(), "eventlite.db"), opts)
}

// MustOpenPath is MustOpen on a given path.
func MustOpenPath(tb testing.TB, path string, opts *store.Options) *store.Store {
	tb.Helper()
	var o store.Options
	if opts != nil {
		o = *opts
	}
	if o.Synchronous == "" {
		o.Synchronous = "NORMAL"
	}
	s, err := store.Open(context.Background(), path, &o)
	if err != nil {
		tb.Fatalf("open store: %v", err)
	}
	tb.Cleanup(func() {
		if err := s.CheckInvariants(context.Background()); err != nil {
			tb.Errorf("after the test: %v", err)
		}
		if err := s.Close(); err != nil {
			tb.Errorf("close store: %v", err)
		}
	})
	return s
}
