package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/eventlite/eventlite/internal/inside"

	"github.com/eventlite/eventlite/internal/outboxmark"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/outbox"
)

// PublishAll marks every pending outbox row published, as a relay would,
// so that a scavenge may remove the events. It reports a failure with
// tb.Error (it may run on a goroutine other than the test's) and stops.
func PublishAll(tb testing.TB, s *store.Store) {
	tb.Helper()
	ctx := context.Background()
	lease, err := store.Inner(inside.Key{}, s).AcquireLease(ctx, "relay", "test", time.Minute)
	if err != nil {
		tb.Error(err)
		return
	}
	defer func() { _ = store.Inner(inside.Key{}, s).ReleaseLease(ctx, lease) }()
	for {
		rows, err := outbox.For(s).Read(ctx, outbox.ReadOptions{Limit: 1000})
		if err != nil {
			tb.Error(err)
			return
		}
		if len(rows) == 0 {
			return
		}
		pub := make([]outboxmark.Published, len(rows))
		for i, r := range rows {
			pub[i] = outboxmark.Published{Position: r.Event.Position}
		}
		if err := s.Update(ctx, func(tx *store.Tx) error {
			_, err := store.Bookkeeping(inside.Key{}, tx).MarkPublished(ctx, lease, pub)
			return err
		}); err != nil {
			tb.Error(err)
			return
		}
	}
}
