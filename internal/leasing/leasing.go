// Package leasing holds one lease of the store for one worker: the
// projection runner, the relay and the rebuilder take, renew and give up
// their leases through a Holder, and name themselves with DefaultOwner
// unless told otherwise. How a worker waits while another holds the lease
// stays with the worker.
//
// Leases are the store's rows, so holders on one SQLite file or on one
// PostgreSQL schema (several hosts) meet the same way.
package leasing

import (
	"context"
	"os"
	"strconv"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/oklog/ulid/v2"

	"github.com/eventlite/eventlite/internal/inside"
	"github.com/eventlite/eventlite/store"
)

// DefaultOwner names this process in a lease: "<host>:<pid>:<random>",
// the form store.OwnerGone recognizes.
func DefaultOwner() string {
	host, _ := os.Hostname()
	return host + ":" + strconv.Itoa(os.Getpid()) + ":" + ulid.Make().String()[20:]
}

// Holder takes, renews and releases one lease on Resource for Owner.
// Its methods are not safe for concurrent use.
type Holder struct {
	Store    *store.Store
	Resource string
	Owner    string
	TTL      time.Duration
	// Name is how log lines call the lease ("lease", "relay lease").
	Name string
	// Log receives the warning when a release fails.
	Log hclog.Logger

	lease   store.Lease
	renewed time.Time
}

// leases opens the store's lease calls, which are not public: an
// application cannot take or steal a worker's lease.
func (h *Holder) leases() interface {
	AcquireLease(ctx context.Context, resource, owner string, ttl time.Duration) (store.Lease, error)
	RenewLease(ctx context.Context, l store.Lease) (store.Lease, error)
	ReleaseLease(ctx context.Context, l store.Lease) error
} {
	return store.Inner(inside.Key{}, h.Store)
}

// Acquire tries once to take the lease; it fails with an error matching
// store.ErrLeaseHeld while another owner holds it.
func (h *Holder) Acquire(ctx context.Context) (store.Lease, error) {
	l, err := h.leases().AcquireLease(ctx, h.Resource, h.Owner, h.TTL)
	if err != nil {
		return store.Lease{}, err
	}
	h.lease, h.renewed = l, time.Now()
	return l, nil
}

// Lease is the lease held, as last taken or renewed.
func (h *Holder) Lease() store.Lease { return h.lease }

// Renewed is when the lease was last taken or renewed.
func (h *Holder) Renewed() time.Time { return h.renewed }

// Renew renews the lease now. It fails with store.ErrStaleFence when the
// lease was taken over or released meanwhile.
func (h *Holder) Renew(ctx context.Context) (store.Lease, error) {
	l, err := h.leases().RenewLease(ctx, h.lease)
	if err != nil {
		return store.Lease{}, err
	}
	h.lease, h.renewed = l, time.Now()
	return l, nil
}

// RenewAfter renews the lease when every has passed since it was last
// taken or renewed, and returns the lease held.
func (h *Holder) RenewAfter(ctx context.Context, every time.Duration) (store.Lease, error) {
	if time.Since(h.renewed) < every {
		return h.lease, nil
	}
	return h.Renew(ctx)
}

// Release gives the lease up within timeout, on a context of its own so
// that it runs after the worker's context ended. A failure is logged as a
// warning (the lease expires on its own) and returned.
func (h *Holder) Release(timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	err := h.leases().ReleaseLease(ctx, h.lease)
	if err != nil {
		h.Log.Warn("could not release the "+h.Name+"; it expires on its own", "error", err)
	}
	return err
}
