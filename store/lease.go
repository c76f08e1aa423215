package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/eventlite/eventlite/store/internal/driver"
)

// Leases is the store's lease table, reached with Store.Leases: one
// holder per resource at a time, fenced by a token that grows with every
// new holder (Bookkeeping's CheckFence). An operator lists the leases;
// taking, renewing and releasing one is for eventlite's own workers (the
// relay, the projection runner, the rebuilder) through store.Inner, so
// that no application code can take or steal a worker's lease.
type Leases struct{ s *Store }

// Leases returns the store's leases, for listing.
func (s *Store) Leases() *Leases { return &Leases{s: s} }

// ErrLeaseHeld: another owner holds the lease and it has not expired.
// Retryable: wait and try again (a standby does exactly that).
var ErrLeaseHeld = errors.New("lease held by another owner")

// ErrStaleFence: a fenced write carried a lease that is no longer the
// current one (expired, released, or taken over). The writer lost its
// lease and must stop writing. Permanent for that lease.
var ErrStaleFence = errors.New("stale lease: the lease was lost")

// LeaseHeldError names the current holder.
type LeaseHeldError struct {
	Resource  string
	Owner     string
	ExpiresIn time.Duration
}

func (e *LeaseHeldError) Error() string {
	return fmt.Sprintf("lease %q is held by %s for another %s", e.Resource, e.Owner, e.ExpiresIn.Round(time.Millisecond))
}

// Unwrap lets errors.Is(err, ErrLeaseHeld) match.
func (e *LeaseHeldError) Unwrap() error { return ErrLeaseHeld }

// Lease is a held lease. Token is the fencing token: it grows with every
// new owner of the resource.
type Lease struct {
	Resource  string
	Owner     string
	Token     int64
	ExpiresAt time.Time // by SQLite's clock
	TTL       time.Duration
}

// AcquireLease takes the lease on resource for owner for ttl. A lease
// that is free, released or expired is taken with a new, higher token; one
// owner's own live lease is renewed with its token unchanged; a lease held
// by another owner returns a *LeaseHeldError.
func (in inner) AcquireLease(ctx context.Context, resource, owner string, ttl time.Duration) (Lease, error) {
	s := in.s
	if resource == "" || owner == "" || ttl <= 0 {
		return Lease{}, errors.New("store: AcquireLease needs a resource, an owner and a positive ttl")
	}
	var l Lease
	err := s.Update(ctx, func(tx *Tx) error {
		g, err := s.ex.AcquireLease(ctx, s.wconn, resource, owner, ttl.Milliseconds())
		if err != nil {
			return mapErr(err)
		}
		if g.Held {
			return &LeaseHeldError{Resource: resource, Owner: g.Owner, ExpiresIn: time.Duration(g.ExpiresAt-g.Now) * time.Millisecond}
		}
		l = Lease{Resource: resource, Owner: owner, Token: g.Token, ExpiresAt: time.UnixMilli(g.ExpiresAt).UTC(), TTL: ttl}
		return nil
	})
	if err != nil {
		return Lease{}, fmt.Errorf("acquire lease %q: %w", resource, err)
	}
	s.log.Debug("lease acquired", "resource", resource, "owner", owner, "token", l.Token)
	return l, nil
}

// RenewLease extends a held lease by its TTL. It fails with
// ErrStaleFence when the lease was taken over or released meanwhile (an
// expired lease that nobody took is renewed: no other owner wrote under
// it).
func (in inner) RenewLease(ctx context.Context, l Lease) (Lease, error) {
	s := in.s
	err := s.Update(ctx, func(tx *Tx) error {
		exp, ok, err := s.ex.RenewLease(ctx, s.wconn, l.fence(), l.TTL.Milliseconds())
		if err != nil {
			return mapErr(err)
		}
		if !ok {
			return fmt.Errorf("%w: %q token %d is no longer current", ErrStaleFence, l.Resource, l.Token)
		}
		l.ExpiresAt = time.UnixMilli(exp).UTC()
		return nil
	})
	if err != nil {
		return Lease{}, fmt.Errorf("renew lease %q: %w", l.Resource, err)
	}
	return l, nil
}

// ReleaseLease gives the lease up so a standby may take it at once. A
// lease that is no longer current is left alone.
func (in inner) ReleaseLease(ctx context.Context, l Lease) error {
	s := in.s
	err := s.Update(ctx, func(tx *Tx) error {
		return mapErr(s.ex.ReleaseLease(ctx, s.wconn, l.fence()))
	})
	if err != nil {
		return fmt.Errorf("release lease %q: %w", l.Resource, err)
	}
	s.log.Debug("lease released", "resource", l.Resource, "owner", l.Owner, "token", l.Token)
	return nil
}

// CheckFence fails with ErrStaleFence unless l is the current, unexpired
// lease on its resource. Call it first in every fenced Update: the check
// and the writes commit together under the write lock, so a worker that
// lost its lease cannot write.
func (tx txBook) CheckFence(ctx context.Context, l Lease) error {
	if err := tx.check(); err != nil {
		return err
	}
	s := tx.s
	ok, err := s.ex.CheckFence(ctx, s.wconn, l.fence())
	if err != nil {
		return mapErr(err)
	}
	if !ok {
		return l.staleFence()
	}
	return nil
}

// fence is the lease as a fenced write carries it to the driver.
func (l Lease) fence() driver.Fence {
	return driver.Fence{Resource: l.Resource, Owner: l.Owner, Token: l.Token}
}

// staleFence is the error of a fenced write whose lease is no longer
// current.
func (l Lease) staleFence() error {
	return fmt.Errorf("%w: %q token %d (owner %s)", ErrStaleFence, l.Resource, l.Token, l.Owner)
}

// LeaseInfo describes a lease row, for reporting.
type LeaseInfo struct {
	Resource   string
	Owner      string // "" when released
	Token      int64
	ExpiresAt  time.Time
	AcquiredAt time.Time
	Expired    bool // by SQLite's clock at the time of reading
}

// List lists every lease row.
func (ls *Leases) List(ctx context.Context) ([]LeaseInfo, error) {
	s := ls.s
	rows, err := s.ex.ListLeases(ctx, s.rdb)
	if err != nil {
		return nil, mapErr(err)
	}
	var out []LeaseInfo
	for _, r := range rows {
		out = append(out, LeaseInfo{Resource: r.Resource, Owner: r.Owner, Token: r.Token,
			ExpiresAt: time.UnixMilli(r.ExpiresAt).UTC(), AcquiredAt: time.UnixMilli(r.AcquiredAt).UTC(), Expired: r.Expired})
	}
	return out, nil
}
