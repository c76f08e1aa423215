package store_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/internal/inside"
	"github.com/eventlite/eventlite/internal/outboxmark"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/drivertest"
	"github.com/eventlite/eventlite/store/outbox"
	"github.com/eventlite/eventlite/store/storetest"
)

// TestRecordFailureBatch: one RecordFailure call larger than a statement's
// share of failures records each failure on its own row, with its own
// error and next attempt; a position listed twice fails twice; a position
// without an event and a row already published are skipped and not
// counted.
func TestRecordFailureBatch(t *testing.T) {
	ctx := context.Background()
	s := storetest.MustOpen(t, nil)
	const n = 2500
	for i := 0; i < n; i += 500 {
		evs := make([]envelope.Event, 500)
		for j := range evs {
			evs[j] = drivertest.EventWithID(t, fmt.Sprintf("e-%d", i+j), "order.placed", map[string]any{"i": i + j})
		}
		if _, err := s.Append(ctx, "acme", fmt.Sprintf("order-%d", i+1), store.NoStream, evs...); err != nil {
			t.Fatal(err)
		}
	}
	lease, err := store.Inner(inside.Key{}, s).AcquireLease(ctx, "relay", "r1", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if err := s.Update(ctx, func(tx *store.Tx) error {
		_, err := store.Bookkeeping(inside.Key{}, tx).MarkPublished(ctx, lease, []outboxmark.Published{{Position: 1}})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	var fs []outboxmark.Failure
	for p := int64(1); p <= n; p++ {
		fs = append(fs, outboxmark.Failure{Position: p, Error: fmt.Sprintf("nope %d\x00é", p), NextAttemptAt: now.Add(time.Duration(p) * time.Second)})
	}
	fs = append(fs, outboxmark.Failure{Position: 7, Error: "again", NextAttemptAt: now.Add(time.Hour)}, outboxmark.Failure{Position: n + 10, Error: "no event"})
	if err := s.Update(ctx, func(tx *store.Tx) error { return store.Bookkeeping(inside.Key{}, tx).RecordFailure(ctx, lease, fs) }); err != nil {
		t.Fatal(err)
	}
	entries, err := outbox.For(s).Entries(ctx, 0, n+100)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != n {
		t.Fatalf("%d entries, want %d", len(entries), n)
	}
	for _, x := range entries {
		want := outbox.Entry{Attempts: 1, LastError: fmt.Sprintf("nope %d\x00é", x.Position), NextAttemptAt: now.Add(time.Duration(x.Position) * time.Second).UTC()}
		switch x.Position {
		case 1:
			want = outbox.Entry{}
		case 7:
			want = outbox.Entry{Attempts: 2, LastError: "again", NextAttemptAt: now.Add(time.Hour).UTC()}
		}
		if x.Attempts != want.Attempts || x.LastError != want.LastError || !x.NextAttemptAt.Equal(want.NextAttemptAt) {
			t.Fatalf("position %d: attempts %d, error %q, next %v; want %d, %q, %v", x.Position, x.Attempts, x.LastError, x.NextAttemptAt,
				want.Attempts, want.LastError, want.NextAttemptAt)
		}
	}
	st, err := outbox.For(s).Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Retried != n {
		t.Fatalf("retried %d, want %d", st.Retried, n)
	}
	// A stale lease writes nothing.
	stale := lease
	stale.Token++
	err = s.Update(ctx, func(tx *store.Tx) error { return store.Bookkeeping(inside.Key{}, tx).RecordFailure(ctx, stale, fs[:1]) })
	if !errors.Is(err, store.ErrStaleFence) {
		t.Fatalf("stale lease: %v", err)
	}
}
