package drivertest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/eventlite/eventlite/internal/inside"
	"github.com/eventlite/eventlite/projection"
	"github.com/eventlite/eventlite/store"
)

// acquireEventually retries until the lease is free (it waits for expiry
// on the database's clock), bounded by a deadline.
func acquireEventually(t *testing.T, s *store.Store, resource, owner string, ttl time.Duration) store.Lease {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		l, err := store.Inner(inside.Key{}, s).AcquireLease(context.Background(), resource, owner, ttl)
		if err == nil {
			return l
		}
		if !errors.Is(err, store.ErrLeaseHeld) || time.Now().After(deadline) {
			t.Fatalf("acquire %s as %s: %v", resource, owner, err)
		}
		time.Sleep(5 * time.Millisecond) // polling a wall-clock expiry
	}
}

func testLeaseFencing(t *testing.T, h Harness) {
	ctx := context.Background()
	s := h.Open(t, nil)
	a, err := store.Inner(inside.Key{}, s).AcquireLease(ctx, "relay", "a", 200*time.Millisecond)
	if err != nil || a.Token != 1 {
		t.Fatalf("first acquire: %+v %v", a, err)
	}
	var held *store.LeaseHeldError
	if _, err := store.Inner(inside.Key{}, s).AcquireLease(ctx, "relay", "b", time.Second); !errors.As(err, &held) || held.Owner != "a" {
		t.Fatalf("second owner while held: %v", err)
	}
	// The holder may write, and renew.
	if err := s.Update(ctx, func(tx *store.Tx) error { return store.Bookkeeping(inside.Key{}, tx).SetCheckpoint(ctx, "p", 5, &a) }); err != nil {
		t.Fatalf("fenced write by the holder: %v", err)
	}
	if a, err = store.Inner(inside.Key{}, s).RenewLease(ctx, a); err != nil || a.Token != 1 {
		t.Fatalf("renew: %+v %v", a, err)
	}
	// b takes over once a's lease expires: a higher token.
	b := acquireEventually(t, s, "relay", "b", time.Minute)
	if b.Token != 2 {
		t.Errorf("takeover token %d, want 2", b.Token)
	}
	// a lost it: its fenced writes and renewals are refused.
	err = s.Update(ctx, func(tx *store.Tx) error { return store.Bookkeeping(inside.Key{}, tx).SetCheckpoint(ctx, "p", 99, &a) })
	if !errors.Is(err, store.ErrStaleFence) {
		t.Fatalf("stale holder wrote: %v", err)
	}
	if _, err := store.Inner(inside.Key{}, s).RenewLease(ctx, a); !errors.Is(err, store.ErrStaleFence) {
		t.Fatalf("stale holder renewed: %v", err)
	}
	if p, _ := projection.Records(s).Checkpoint(ctx, "p"); p != 5 {
		t.Errorf("checkpoint %d after a refused write, want 5", p)
	}
	// A stale release leaves b's lease alone; b's release frees it at once.
	if err := store.Inner(inside.Key{}, s).ReleaseLease(ctx, a); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Inner(inside.Key{}, s).AcquireLease(ctx, "relay", "c", time.Second); !errors.Is(err, store.ErrLeaseHeld) {
		t.Fatalf("a stale release freed the lease: %v", err)
	}
	if err := store.Inner(inside.Key{}, s).ReleaseLease(ctx, b); err != nil {
		t.Fatal(err)
	}
	c, err := store.Inner(inside.Key{}, s).AcquireLease(ctx, "relay", "c", time.Second)
	if err != nil || c.Token != 3 {
		t.Fatalf("after release: %+v %v", c, err)
	}
	if err := s.Update(ctx, func(tx *store.Tx) error { return store.Bookkeeping(inside.Key{}, tx).SetCheckpoint(ctx, "p", 7, &b) }); !errors.Is(err, store.ErrStaleFence) {
		t.Fatalf("released holder wrote: %v", err)
	}
	leases, err := s.Leases().List(ctx)
	if err != nil || len(leases) != 1 || leases[0].Owner != "c" || leases[0].Token != 3 {
		t.Errorf("Leases = %+v, %v", leases, err)
	}
}

func testLeaseOneOwnerAmongMany(t *testing.T, h Harness) {
	ctx := context.Background()
	s := h.Open(t, nil)
	errs := make(chan error, 16)
	for i := range 16 {
		go func() {
			_, err := store.Inner(inside.Key{}, s).AcquireLease(ctx, "projection:x", string(rune('a'+i)), time.Minute)
			errs <- err
		}()
	}
	won := 0
	for range 16 {
		err := <-errs
		switch {
		case err == nil:
			won++
		case !errors.Is(err, store.ErrLeaseHeld):
			t.Error(err)
		}
	}
	if won != 1 {
		t.Errorf("%d owners at once", won)
	}
}
