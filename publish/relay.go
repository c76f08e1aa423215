package publish

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/eventlite/eventlite/internal/leasing"
	"github.com/eventlite/eventlite/internal/tracing"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/outbox"
)

// Options configures a Relay. Zero fields take the documented defaults.
type Options struct {
	// Store is the event store whose outbox the relay drains. Required.
	Store *store.Store
	// Publisher is the destination. Required. The relay does not close it.
	Publisher Publisher
	// Owner names this relay in the lease. Default "<host>:<pid>:<random>".
	Owner string
	// Lease is the lease's resource name. Default "relay": one store has
	// one outbox and one destination.
	Lease string
	// LeaseTTL is how long the lease lasts unless renewed. Default 15s.
	LeaseTTL time.Duration
	// RenewEvery is how often the holder renews it; below LeaseTTL.
	// Default 5s.
	RenewEvery time.Duration
	// BatchSize is how many rows one batch reads, publishes at once and
	// marks in one transaction. Default 1024.
	BatchSize int
	// PollInterval bounds how long an idle relay waits before it looks
	// again. New commits wake it at once (the store announces them; other
	// processes' commits within the store's own PollInterval). Default 1s.
	PollInterval time.Duration
	// MaxAttempts is how many transient failures an event may have; the
	// last one dead-letters it. Default 10.
	MaxAttempts int
	// RetryBase and RetryMax bound the wait before an event that failed
	// transiently is tried again: RetryBase doubled per attempt, at most
	// RetryMax, with jitter. Defaults 1s and 5m.
	RetryBase, RetryMax time.Duration
	// BackoffBase and BackoffMax bound the wait while the destination is
	// unreachable: doubled per failed round, at most BackoffMax, with
	// jitter. Defaults 200ms and 15s.
	BackoffBase, BackoffMax time.Duration
	// Once makes Run drain the outbox and return instead of waiting for
	// new events.
	Once bool
	// Logger receives structured logs. Default: none.
	Logger hclog.Logger
	// TracerProvider starts the relay's send spans: one per round (its
	// own trace, linked to the events' origins) and one per message,
	// parented on the event's stored traceparent. Default: otel's global
	// provider, looked up at each round; while none is set, tracing costs
	// nothing.
	TracerProvider trace.TracerProvider
	// Propagator writes each message's per-hop context into the
	// Message.Headers the Publisher is given. Default: otel's global
	// propagator (set it to propagation.TraceContext{} for the W3C
	// traceparent and tracestate headers).
	Propagator propagation.TextMapPropagator
	// Latency, when set, observes how long each round's publish took
	// (operation "publish"), with the round's span in its context.
	// Default: none.
	Latency store.LatencyObserver
	// OnBatch, when set, is called after each batch is settled (or
	// refused), on the relay's goroutine: for progress and tests.
	OnBatch func(BatchReport)
	// OnLease, when set, is called with the lease token when the relay
	// takes the lease, and with 0 when it releases or loses it.
	OnLease func(token int64)

	// Test hooks, set by the package's tests (export_test.go): the
	// clock for retry times and waits (default the system clock) and
	// the jitter's seed (default random).
	clock clock
	seed  uint64
}

// clock tells the time and waits. Tests drive a fake one.
type clock interface {
	Now() time.Time
	// At returns a channel that receives once the clock reaches t (at
	// once when it has).
	At(t time.Time) <-chan time.Time
}

type systemClock struct{}

func (systemClock) Now() time.Time                  { return time.Now() }
func (systemClock) At(t time.Time) <-chan time.Time { return time.After(time.Until(t)) }

// BatchReport describes one batch.
type BatchReport struct {
	Token        int64 // the lease token the batch was settled under
	Rows         int   // rows read
	Published    int   // rows marked published (duplicates included)
	Duplicates   int   // of those, the broker already held
	Retrying     int   // rows that failed transiently, to be retried
	DeadLettered int   // rows dead-lettered
	Waiting      int   // rows left pending: their stream stopped in the batch, or the destination was down
	First, Last  int64 // positions of the first and last row read
	// Err is the batch's settle error: ErrStaleFence when the lease was
	// lost and the store refused the writes.
	Err error
	// Down is the destination's error when it was unreachable.
	Down error
}

// IncompleteError is what Run with Once returns when rows remain: its
// context ended first, or the rows wait behind dead letters.
type IncompleteError struct {
	// Pending counts the rows neither published nor dead-lettered.
	Pending int64
	// Reason says why they remain.
	Reason string
	// Err is the context's error, nil when only parked rows remain.
	Err error
}

func (e *IncompleteError) Error() string {
	return fmt.Sprintf("%d outbox row(s) still pending: %s", e.Pending, e.Reason)
}

func (e *IncompleteError) Unwrap() error { return e.Err }

// Relay publishes the store's outbox to a destination: every event at
// least once, each stream in order. See the package documentation.
type Relay struct {
	opts  Options
	st    *store.Store
	pub   Publisher
	log   hclog.Logger
	rnd   *rand.Rand
	trace tracing.Config
	h     *leasing.Holder // used by Run's goroutine and its renewer, in turn

	mu     sync.Mutex
	cancel context.CancelFunc
	done   chan struct{}
	reason string // why rows wait, for IncompleteError
	stats  Stats

	backoff time.Duration // current unreachable backoff; 0 when up
	downErr error
}

// Stats are a relay's counters since it started.
type Stats struct {
	Batches      int64
	Published    int64
	Duplicates   int64
	Retrying     int64
	DeadLettered int64
	Unreachable  int64 // rounds the destination was down
	LeaseToken   int64 // the lease held now, 0 when standing by
	LeasesLost   int64
	// UnreachableSince is when the destination was found unreachable;
	// zero while it is reachable. UnreachableError is the error it
	// answered with last.
	UnreachableSince time.Time
	UnreachableError string
}

var errLeaseLost = errors.New("relay lease lost")

// New checks the options and returns a relay; Run starts it.
func New(opts Options) (*Relay, error) {
	if opts.Store == nil || opts.Publisher == nil {
		return nil, errors.New("publish: Options needs a Store and a Publisher")
	}
	if opts.Owner == "" {
		opts.Owner = leasing.DefaultOwner()
	}
	if opts.Lease == "" {
		opts.Lease = "relay"
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&opts.LeaseTTL, 15*time.Second)
	def(&opts.RenewEvery, 5*time.Second)
	def(&opts.PollInterval, time.Second)
	def(&opts.RetryBase, time.Second)
	def(&opts.RetryMax, 5*time.Minute)
	def(&opts.BackoffBase, 200*time.Millisecond)
	def(&opts.BackoffMax, 15*time.Second)
	if opts.BatchSize == 0 {
		opts.BatchSize = 1024
	}
	if opts.MaxAttempts == 0 {
		opts.MaxAttempts = 10
	}
	switch {
	case opts.LeaseTTL < 0 || opts.RenewEvery < 0 || opts.PollInterval < 0 || opts.RetryBase < 0 || opts.RetryMax < 0 ||
		opts.BackoffBase < 0 || opts.BackoffMax < 0 || opts.BatchSize < 0 || opts.MaxAttempts < 0:
		return nil, errors.New("publish: Options fields must not be negative")
	case opts.RenewEvery >= opts.LeaseTTL:
		return nil, fmt.Errorf("publish: Options.RenewEvery (%s) must be below LeaseTTL (%s)", opts.RenewEvery, opts.LeaseTTL)
	}
	if opts.Logger == nil {
		opts.Logger = hclog.NewNullLogger()
	}
	if opts.clock == nil {
		opts.clock = systemClock{}
	}
	seed := opts.seed
	if seed == 0 {
		seed = rand.Uint64()
	}
	log := opts.Logger.Named("relay").With("owner", opts.Owner)
	return &Relay{
		opts:  opts,
		st:    opts.Store,
		pub:   opts.Publisher,
		log:   log,
		trace: tracing.Config{TP: opts.TracerProvider, Prop: opts.Propagator},
		rnd:   rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		h:     &leasing.Holder{Store: opts.Store, Resource: opts.Lease, Owner: opts.Owner, TTL: opts.LeaseTTL, Name: "relay lease", Log: log},
	}, nil
}

// Stats returns the relay's counters.
func (r *Relay) Stats() Stats {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stats
}

// Run relays until ctx ends or Close is called, then releases the lease
// and returns nil; the batch in flight is abandoned (its rows stay
// pending). It returns an error when the destination is misconfigured
// (Fatal), and an error matching store.ErrClosed when the store is
// closed. It returns an error matching store.ErrMasterKey, having
// published nothing of the batch and left its rows pending, when an event
// to publish cannot be decrypted: a *store.EncryptedError (also
// store.ErrNoMasterKey) when the store was opened without the master
// key, a *store.MasterKeyError for a wrong one. With Options.Once it returns nil once every row is published
// or dead-lettered, and an *IncompleteError when rows remain: ctx ended
// first, or they wait behind dead letters. While another relay holds the
// lease, Run stands by and takes over when that lease is released or
// expires.
func (r *Relay) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	r.mu.Lock()
	if r.done != nil {
		r.mu.Unlock()
		return errors.New("publish: Relay.Run called twice")
	}
	r.cancel, r.done = cancel, make(chan struct{})
	r.mu.Unlock()
	defer close(r.done)
	for {
		lease, err := r.acquire(ctx)
		if err != nil {
			return r.finish(ctx, err)
		}
		err = r.hold(ctx, lease)
		r.setToken(0)
		if errors.Is(err, errLeaseLost) {
			r.mu.Lock()
			r.stats.LeasesLost++
			r.mu.Unlock()
			r.log.Warn("lost the relay lease: its writes are refused; standing by", "token", lease.Token)
			continue
		}
		if r.h.Release(time.Second) == nil {
			r.log.Info("released the relay lease", "token", lease.Token)
		}
		return r.finish(ctx, err)
	}
}

// finish turns the end of Run into its result.
func (r *Relay) finish(ctx context.Context, err error) error {
	if err == nil || ctx.Err() == nil || !errors.Is(err, ctx.Err()) {
		return err
	}
	if !r.opts.Once {
		return nil // stopped on request
	}
	inc := &IncompleteError{Reason: r.whyPending(), Err: ctx.Err()}
	if errors.Is(ctx.Err(), context.Canceled) {
		inc.Reason = "interrupted before the outbox was drained"
	}
	sctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if st, serr := outbox.For(r.st).Stats(sctx); serr == nil {
		inc.Pending = st.Pending - st.DeadLetters
		if inc.Pending == 0 && errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil // it all went out as the time ran out
		}
	}
	return inc
}

// Close stops Run and waits for it to return.
func (r *Relay) Close() error {
	r.mu.Lock()
	cancel, done := r.cancel, r.done
	r.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
	return nil
}

func (r *Relay) setReason(s string) {
	r.mu.Lock()
	r.reason = s
	r.mu.Unlock()
}

func (r *Relay) whyPending() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.reason == "" {
		return "the run ended before they were published"
	}
	return r.reason
}

func (r *Relay) setToken(t int64) {
	r.mu.Lock()
	r.stats.LeaseToken = t
	r.mu.Unlock()
	if r.opts.OnLease != nil {
		r.opts.OnLease(t)
	}
}

// acquire takes the lease, standing by while another relay holds it.
func (r *Relay) acquire(ctx context.Context) (store.Lease, error) {
	announced := false
	wait := r.opts.BackoffBase
	for {
		changed := r.st.Changed()
		l, err := r.h.Acquire(ctx)
		if err == nil {
			r.log.Info("holding the relay lease", "token", l.Token, "ttl", r.opts.LeaseTTL)
			r.setToken(l.Token)
			return l, nil
		}
		if ctx.Err() != nil {
			return store.Lease{}, ctx.Err()
		}
		if errors.Is(err, store.ErrClosed) {
			return store.Lease{}, err
		}
		var held *store.LeaseHeldError
		if !errors.As(err, &held) {
			r.log.Warn("cannot take the relay lease; trying again", "error", err, "wait", wait)
			r.setReason("the relay lease could not be taken: " + err.Error())
			if err := r.sleep(ctx, wait); err != nil {
				return store.Lease{}, err
			}
			wait = min(wait*2, r.opts.BackoffMax)
			continue
		}
		r.setReason(fmt.Sprintf("another relay (%s) holds the lease", held.Owner))
		if !announced {
			r.log.Info("another relay holds the lease; standing by", "holder", held.Owner, "expires_in", held.ExpiresIn)
			announced = true
		}
		if err := r.standBy(ctx, changed, held.ExpiresIn); err != nil {
			return store.Lease{}, err
		}
	}
}

// standBy waits until the holder's lease may have ended: it expires, or a
// commit (the holder's release among them) leaves the lease row free.
func (r *Relay) standBy(ctx context.Context, changed <-chan struct{}, expiresIn time.Duration) error {
	expiry := time.NewTimer(expiresIn + 5*time.Millisecond)
	defer expiry.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-expiry.C:
			return nil
		case <-changed:
		}
		// A commit: the holder's batches mostly. Read, do not write: is
		// the lease free now?
		changed = r.st.Changed()
		leases, err := r.st.Leases().List(ctx)
		if errors.Is(err, store.ErrClosed) {
			return err
		}
		if err != nil {
			continue
		}
		for _, li := range leases {
			if li.Resource == r.opts.Lease && (li.Owner == "" || li.Expired) {
				return nil
			}
		}
		// Look again at most every 50ms however busy the holder is.
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// sleep waits d on the relay's clock, or until ctx ends.
func (r *Relay) sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-r.opts.clock.At(r.opts.clock.Now().Add(d)):
		return nil
	}
}

// hold relays while the lease is held: it renews the lease in the
// background and works batch by batch. It returns errLeaseLost when the
// lease was lost, ctx's error when ctx ended, nil when Once drained the
// outbox, and a Fatal destination error.
func (r *Relay) hold(ctx context.Context, lease store.Lease) error {
	lctx, lost := context.WithCancelCause(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		r.renew(lctx, lost)
	}()
	err := r.work(lctx, lease)
	lost(nil) // stops the renewer (a cause set before stays)
	wg.Wait()
	if cause := context.Cause(lctx); errors.Is(cause, errLeaseLost) {
		return errLeaseLost
	}
	return err
}

// renew renews the lease every RenewEvery until ctx ends. A renewal that
// finds the lease taken over cancels ctx with errLeaseLost.
func (r *Relay) renew(ctx context.Context, lost context.CancelCauseFunc) {
	t := time.NewTicker(r.opts.RenewEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if _, err := r.h.Renew(ctx); err != nil {
			if errors.Is(err, store.ErrStaleFence) {
				lost(errLeaseLost)
				return
			}
			if ctx.Err() == nil {
				r.log.Warn("could not renew the relay lease; trying again", "error", err)
			}
		}
	}
}
