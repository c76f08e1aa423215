package publish_test

import (
	"context"
	"errors"
	"io"
	"path/filepath"
	"testing"
	"time"

	"github.com/eventlite/eventlite/publish"
	"github.com/eventlite/eventlite/store"
)

// TestRelayOnClosedStore: the relay's Run returns an error matching
// store.ErrClosed when its store is closed, before Run or while it runs,
// instead of trying again forever. The deadline only keeps a broken relay
// from hanging the test.
func TestRelayOnClosedStore(t *testing.T) {
	for _, when := range []string{"before Run", "while it runs"} {
		t.Run(when, func(t *testing.T) {
			s, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "closed.db"), &store.Options{Synchronous: "NORMAL"})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			appendEvents(t, s, "default", "order-1", 3)
			leased := make(chan struct{}, 1)
			r := newRelay(t, publish.Options{Store: s, Publisher: publish.NewStdout(io.Discard), OnLease: func(token int64) {
				if token != 0 {
					select {
					case leased <- struct{}{}:
					default:
					}
				}
			}})
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			if when == "before Run" {
				if err := s.Close(); err != nil {
					t.Fatal(err)
				}
			}
			done := make(chan error, 1)
			go func() { done <- r.Run(ctx) }()
			if when == "while it runs" {
				<-leased
				if err := s.Close(); err != nil {
					t.Fatal(err)
				}
			}
			if err := <-done; !errors.Is(err, store.ErrClosed) {
				t.Errorf("Run: %v, want an error matching store.ErrClosed", err)
			}
		})
	}
}
