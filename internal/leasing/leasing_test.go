package leasing_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/eventlite/eventlite/internal/leasing"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/storetest"
)

// TestHolder: a holder takes the lease, renews it only when due, keeps
// a second owner out while it holds it, and releases it so the second
// owner takes it at once.
func TestHolder(t *testing.T) {
	ctx := context.Background()
	s := storetest.MustOpen(t, nil)
	newHolder := func(owner string) *leasing.Holder {
		return &leasing.Holder{Store: s, Resource: "r", Owner: owner, TTL: time.Hour, Name: "lease", Log: hclog.NewNullLogger()}
	}
	a, b := newHolder("a"), newHolder("b")
	l, err := a.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	renewed := a.Renewed()
	if got, err := a.RenewAfter(ctx, time.Hour); err != nil || got != l || a.Renewed() != renewed {
		t.Fatalf("RenewAfter before due = %v, %v; want the lease unchanged", got, err)
	}
	if got, err := a.RenewAfter(ctx, 0); err != nil || got.Token != l.Token || !a.Renewed().After(renewed) {
		t.Fatalf("RenewAfter when due = %v, %v; want it renewed with token %d", got, err, l.Token)
	}
	if _, err := b.Acquire(ctx); !errors.Is(err, store.ErrLeaseHeld) {
		t.Fatalf("second owner's Acquire = %v, want ErrLeaseHeld", err)
	}
	if err := a.Release(time.Second); err != nil {
		t.Fatal(err)
	}
	lb, err := b.Acquire(ctx)
	if err != nil || lb.Token <= l.Token {
		t.Fatalf("Acquire after release = %v, %v; want a higher token than %d", lb, err, l.Token)
	}
	if _, err := a.Renew(ctx); !errors.Is(err, store.ErrStaleFence) {
		t.Fatalf("old holder's Renew = %v, want ErrStaleFence", err)
	}
}

// TestDefaultOwner: host:pid:random, the form store.OwnerGone reads (a
// live process, this one, is not gone).
func TestDefaultOwner(t *testing.T) {
	o := leasing.DefaultOwner()
	if parts := strings.Split(o, ":"); len(parts) < 3 || parts[len(parts)-1] == "" {
		t.Fatalf("DefaultOwner() = %q, want host:pid:random", o)
	}
	if store.OwnerGone(o) {
		t.Fatalf("OwnerGone(%q) = true for this process", o)
	}
	if leasing.DefaultOwner() == o {
		t.Fatal("two DefaultOwner calls gave the same owner")
	}
}
