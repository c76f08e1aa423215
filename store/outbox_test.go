package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/eventlite/eventlite/store"
)

// appendN appends n events to a stream and returns their positions.
func appendN(t *testing.T, s *store.Store, tenant, stream string, n int) []int64 {
	t.Helper()
	var ps []int64
	for i := range n {
		res, err := s.Append(context.Background(), tenant, stream, store.Any, ev(t, "thing.happened", map[string]int{"i": i}))
		if err != nil {
			t.Fatal(err)
		}
		ps = append(ps, res.Positions()...)
	}
	return ps
}

func pendingPositions(t *testing.T, s *store.Store, now time.Time) []int64 {
	t.Helper()
	rows, err := s.Outbox().Read(context.Background(), store.OutboxReadOptions{Limit: 1000, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	var ps []int64
	for _, r := range rows {
		ps = append(ps, r.Event.Position)
	}
	return ps
}

func settle(t *testing.T, s *store.Store, l store.Lease, pub []store.Published, fail, dead []store.Failure) error {
	t.Helper()
	return s.Update(context.Background(), func(tx *store.Tx) error {
		ctx := context.Background()
		if _, err := tx.MarkPublished(ctx, l, pub); err != nil {
			return err
		}
		if err := tx.RecordFailure(ctx, l, fail); err != nil {
			return err
		}
		return tx.DeadLetter(ctx, l, dead)
	})
}

func mustRead(t *testing.T, s *store.Store, o store.OutboxReadOptions) []store.OutboxRow {
	t.Helper()
	rows, err := s.Outbox().Read(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	return rows
}
