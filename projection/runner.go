package projection

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/go-hclog"
	"go.opentelemetry.io/otel/trace"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/internal/inside"
	"github.com/eventlite/eventlite/internal/leasing"
	"github.com/eventlite/eventlite/internal/projrow"
	"github.com/eventlite/eventlite/internal/tracing"
	"github.com/eventlite/eventlite/store"
)

// errCheckpointMoved: the checkpoint is no longer where a batch read it
// (a replay swapped a rebuilt read model in); the batch is discarded.
var errCheckpointMoved = errors.New("checkpoint moved")

// ErrStopped is wrapped by the *StoppedError a runner returns when it
// halts on an event its handler keeps failing on.
var ErrStopped = errors.New("projection stopped on a quarantined event")

// StoppedError says where and why a projection stopped. The event is in
// quarantine; the checkpoint is just before it, so a restart after the fix
// resumes exactly there.
type StoppedError struct {
	Projection string
	Position   int64
	EventID    string
	Attempts   int
	Err        error
}

func (e *StoppedError) Error() string {
	return fmt.Sprintf("projection %s stopped at position %d (event %s) after %d attempts: %v; %s",
		e.Projection, e.Position, e.EventID, e.Attempts, e.Err, advice(e.Projection, e.EventID, e.Err, true))
}

// Unwrap lets errors.Is match ErrStopped and the handler's error.
func (e *StoppedError) Unwrap() []error { return []error{ErrStopped, e.Err} }

// OnError says what a runner does with an event its handler keeps failing
// on, once the event is quarantined.
type OnError int

const (
	// Stop halts the projection (the default): a read model with a hole is
	// worse than a stopped one.
	Stop OnError = iota
	// Skip moves on past the event.
	Skip
)

// RunnerOptions configures a Runner. nil means the defaults.
type RunnerOptions struct {
	// BatchSize is how many events one transaction applies. Default 500.
	BatchSize int
	// LeaseTTL is how long the lease lasts without renewal. Default 15s.
	LeaseTTL time.Duration
	// RenewEvery is how often the lease is renewed. Default LeaseTTL/3.
	RenewEvery time.Duration
	// Owner names this runner in the lease. Default host:pid:random.
	Owner string
	// MaxAttempts bounds how often a failing handler is tried on one event
	// before it is quarantined. Default 3.
	MaxAttempts int
	// OnError: Stop (default) or Skip after quarantining.
	OnError OnError
	// Logger receives structured logs. Default: none.
	Logger hclog.Logger
	// TracerProvider starts a span per batch, in a trace of its own,
	// linked to at most 128 of the batch's event origins. Default: otel's
	// global provider, looked up at each batch.
	TracerProvider trace.TracerProvider
	// Latency, when set, observes how long each batch that had work took
	// (operation "projection_batch"), with the batch's span in its
	// context. Default: none.
	Latency store.LatencyObserver
}

// Runner applies a projection's events from its checkpoint on, holding the
// projection's lease so that one runner is active among several.
type Runner struct {
	s     *store.Store
	p     Projection
	opts  RunnerOptions
	log   hclog.Logger
	trace tracing.Config
	names map[string]string
	types []string // the event types read: p.EventTypes()
	// stopped: the store records the projection as stopped on a
	// quarantined event. Read at setup, kept in step by this runner (it
	// holds the lease, so no other runner writes the status meanwhile).
	stopped bool
}

// NewRunner checks p and returns its runner.
func NewRunner(s *store.Store, p Projection, opts *RunnerOptions) (*Runner, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	var o RunnerOptions
	if opts != nil {
		o = *opts
	}
	if o.BatchSize <= 0 {
		o.BatchSize = 500
	}
	if o.LeaseTTL <= 0 {
		o.LeaseTTL = 15 * time.Second
	}
	if o.RenewEvery <= 0 {
		o.RenewEvery = o.LeaseTTL / 3
	}
	if o.Owner == "" {
		o.Owner = leasing.DefaultOwner()
	}
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = 3
	}
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
	recordBuilt(s, p.Name) // WaitFor knows it from now on
	return &Runner{s: s, p: p, opts: o, log: o.Logger.Named("projection." + p.Name), names: p.liveTables(), types: p.EventTypes(),
		trace: tracing.Config{TP: o.TracerProvider}}, nil
}

// Run waits for the projection's lease (standing by while another runner
// holds it), catches up from the checkpoint, then follows new commits
// until ctx ends. It returns nil when ctx ends, a *StoppedError when the
// projection halts on a quarantined event, ErrStaleFence when it lost its
// lease. A batch that fails with an error store.Retryable accepts (a busy
// database, a session a server ended) is retried, after a wait that
// doubles up to a second, and logged as a warning. A clean stop releases the lease. An event to apply that cannot
// be decrypted stops it with an error matching store.ErrMasterKey, having
// applied nothing of the batch, quarantined nothing and left the
// checkpoint: a *store.EncryptedError (store.ErrNoMasterKey) when the
// store was opened without the master key, a *store.MasterKeyError for a
// wrong one.
func (r *Runner) Run(ctx context.Context) error {
	h, err := r.acquire(ctx, true)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	defer h.Release(releaseTimeout)
	return r.follow(ctx, h, true)
}

// CatchUp brings the projection up to the log head and returns the
// checkpoint reached. It takes the lease for the duration and fails with
// store.ErrLeaseHeld when a runner holds it (that runner keeps the
// projection current).
func (r *Runner) CatchUp(ctx context.Context) (int64, error) {
	h, err := r.acquire(ctx, false)
	if err != nil {
		return 0, err
	}
	defer h.Release(releaseTimeout)
	if err := r.follow(ctx, h, false); err != nil {
		return 0, err
	}
	return Records(r.s).Checkpoint(ctx, r.p.Name)
}

// releaseTimeout bounds the release on exit, which runs after ctx ended.
const releaseTimeout = 5 * time.Second

func (r *Runner) acquire(ctx context.Context, wait bool) (*leasing.Holder, error) {
	h := &leasing.Holder{Store: r.s, Resource: LeaseResource(r.p.Name), Owner: r.opts.Owner, TTL: r.opts.LeaseTTL, Name: "lease", Log: r.log}
	logged := false
	for {
		l, err := h.Acquire(ctx)
		if err == nil {
			r.log.Info("holding the lease", "owner", r.opts.Owner, "token", l.Token)
			if err := r.setup(ctx, l); err != nil {
				h.Release(releaseTimeout)
				return nil, err
			}
			return h, nil
		}
		if !wait || !errors.Is(err, store.ErrLeaseHeld) {
			return nil, err
		}
		if !logged {
			r.log.Info("standing by: another runner holds the lease", "error", err)
			logged = true
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(r.opts.RenewEvery):
		}
	}
}

// setup creates the read-model tables and registers the projection.
func (r *Runner) setup(ctx context.Context, l store.Lease) error {
	return r.s.Update(ctx, func(tx *store.Tx) error {
		if err := store.Bookkeeping(inside.Key{}, tx).CheckFence(ctx, l); err != nil {
			return err
		}
		if err := r.p.createTables(ctx, r.s, tx, r.names); err != nil {
			return err
		}
		rec, err := Records(r.s).Get(ctx, r.p.Name)
		if err == nil {
			r.stopped = rec.Status == StatusStopped
			return nil
		}
		if !errors.Is(err, store.ErrNotFound) {
			return err
		}
		r.stopped = false
		return store.Bookkeeping(inside.Key{}, tx).SetProjectionStatus(ctx, r.p.Name, string(StatusActive), "")
	})
}

// follow applies batches until the head (live: then waits for commits).
func (r *Runner) follow(ctx context.Context, h *leasing.Holder, live bool) error {
	backoff := time.Duration(0)
	for {
		lease, err := h.RenewAfter(ctx, r.opts.RenewEvery)
		if err != nil {
			if ctx.Err() != nil {
				return nil // stopped while renewing, as while applying
			}
			return err
		}
		changed := r.s.Changed() // before reading, so no commit is missed
		err = r.retryPass(ctx, lease)
		var n int64
		if err == nil {
			n, err = r.tracedBatch(ctx, lease)
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if !live || !store.Retryable(err) {
				return err
			}
			// A busy database, or a session the server ended (the
			// store reconnects): the batch rolled back and the
			// checkpoint stayed, so the next pass applies it again.
			backoff = min(max(2*backoff, 10*time.Millisecond), time.Second)
			r.log.Warn("batch failed; retrying", "error", err, "wait", backoff)
			timer := time.NewTimer(backoff)
			select {
			case <-ctx.Done():
				timer.Stop()
				return nil
			case <-timer.C:
			}
			continue
		}
		backoff = 0
		if n > 0 {
			continue
		}
		if !live {
			return nil
		}
		timer := time.NewTimer(time.Until(h.Renewed().Add(r.opts.RenewEvery)))
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil
		case <-changed:
		case <-timer.C:
		}
		timer.Stop()
	}
}

// batch reads the next events after the checkpoint outside any write
// transaction, then applies them and moves the checkpoint in one fenced
// transaction. It returns how far the checkpoint moved (0 at the head).
func (r *Runner) batch(ctx context.Context, lease store.Lease) (int64, error) {
	cp, err := Records(r.s).Checkpoint(ctx, r.p.Name)
	if err != nil {
		return 0, err
	}
	head, err := r.s.Head(ctx)
	if err != nil {
		return 0, err
	}
	var events []envelope.Event
	for e, err := range r.s.ReadAll(ctx, store.ReadAllOptions{From: cp + 1, Limit: r.opts.BatchSize, Types: r.types}) {
		if err != nil {
			return 0, err
		}
		events = append(events, e)
	}
	// An encrypted event read without the master key has no data: applied,
	// the read model would silently lack it. Stop, applying nothing.
	if err := store.RequireData("projection "+r.p.Name, events...); err != nil {
		r.log.Error("refusing to apply an encrypted event without its data", "error", err)
		return 0, err
	}
	next := cp
	if len(events) > 0 {
		next = events[len(events)-1].Position
	}
	if len(events) < r.opts.BatchSize {
		// Every matching event up to head is in hand: pass the rest.
		next = max(next, head)
	}
	if next == cp {
		return 0, nil
	}
	ctx = r.startBatchSpan(ctx, cp, next, events)
	holes, err := Records(r.s).HolesBetween(ctx, cp, next)
	if err != nil {
		return 0, err
	}
	for _, h := range holes {
		r.log.Warn("passing a hole in the global positions: it cannot fill later (one writer), so it is recorded, not waited for", "from", h.From, "to", h.To)
	}
	if r.p.Deliver != nil {
		return r.deliver(ctx, lease, cp, next, events, holes)
	}
	var stopped *StoppedError
	moved := int64(-1)
	to := next
	err = r.s.Update(ctx, func(tx *store.Tx) error {
		stopped, to = nil, next
		if err := store.Bookkeeping(inside.Key{}, tx).CheckFence(ctx, lease); err != nil {
			return err
		}
		// Compare and set: a replay swaps a rebuilt read model in with its
		// own checkpoint (it never takes this lease from us), and this
		// batch, read before the swap, must not touch the new tables.
		if cur, err := store.Bookkeeping(inside.Key{}, tx).Checkpoint(ctx, r.p.Name); err != nil {
			return err
		} else if cur != cp {
			moved = cur
			return errCheckpointMoved
		}
		// The whole batch under one savepoint (through ApplyBatch when the
		// projection has one); only when it fails, event by event with
		// bounded retries, to find and quarantine the event at fault.
		err := r.p.applyBatchTx(ctx, tx, r.names, events)
		if err == nil {
			return r.finishTx(ctx, tx, lease, cp, to, holes, nil)
		}
		var failed *EventError // the event the batch attempt already failed on
		if !errors.As(err, &failed) {
			failed = nil
		}
		for _, e := range events {
			var prior error
			if failed != nil && e.Position == failed.Position {
				prior = failed.Err
			}
			attempts, err := r.applyWithRetry(ctx, tx, e, prior)
			if err == nil {
				continue
			}
			if err := r.quarantineTx(ctx, tx, e, err, attempts); err != nil {
				return err
			}
			if r.opts.OnError == Skip {
				tracing.Logger(ctx, r.log).Error("skipping an event the handler keeps failing on; it is quarantined", "position", e.Position, "id", e.ID, "error", err,
					"next", advice(r.p.Name, e.ID, err, false))
				continue
			}
			stopped = &StoppedError{Projection: r.p.Name, Position: e.Position, EventID: e.ID, Attempts: attempts, Err: err}
			to = e.Position - 1
			break
		}
		return r.finishTx(ctx, tx, lease, cp, to, holes, stopped)
	})
	if errors.Is(err, errCheckpointMoved) {
		r.log.Info(fmt.Sprintf("checkpoint moved: a replay swapped in a rebuilt read model; resuming from %d", moved), "was", cp)
		return 1, nil // not at the head: read on from the new checkpoint
	}
	if err != nil {
		return 0, err
	}
	r.settled(cp, to, stopped)
	if stopped != nil {
		tracing.Logger(ctx, r.log).Error("projection stopped", "position", stopped.Position, "error", stopped.Err)
		return 0, stopped
	}
	return next - cp, nil
}

// applyWithRetry applies e up to MaxAttempts times; prior, when not nil,
// is the error of an attempt already made (in the batch). An event whose
// data is at fault (it does not decode) is not tried again: it would fail
// the same way.
func (r *Runner) applyWithRetry(ctx context.Context, tx *store.Tx, e envelope.Event, prior error) (int, error) {
	err, tried := prior, 0
	if prior != nil {
		tried = 1
		if dataAtFault(prior) {
			return tried, prior
		}
	}
	for attempt := tried + 1; attempt <= r.opts.MaxAttempts; attempt++ {
		if err = r.p.applyTx(ctx, tx, r.names, e); err == nil {
			return attempt, nil
		}
		r.log.Debug("handler failed", "position", e.Position, "attempt", attempt, "error", err)
		if dataAtFault(err) {
			return attempt, err
		}
	}
	return r.opts.MaxAttempts, err
}

// quarantineTx sets e aside with its cause: the data
// (ReasonUninterpretable) when it does not decode, else the handler
// (ReasonHandlerError).
func (r *Runner) quarantineTx(ctx context.Context, tx *store.Tx, e envelope.Event, cause error, attempts int) error {
	b, _ := e.MarshalJSON()
	reason := ReasonHandlerError
	if dataAtFault(cause) {
		reason = ReasonUninterpretable
	}
	return quarantine(ctx, tx, QuarantineEntry{
		Consumer: r.p.Name, Reason: reason, Tenant: e.Tenant, Subject: e.Stream, Version: e.StreamVersion,
		Position: e.Position, EventID: e.ID, Event: b, Error: cause.Error(), Attempts: attempts,
	})
}

// finishTx records holes, moves the checkpoint to `to`, and keeps the
// projection's status and quarantine in step.
func (r *Runner) finishTx(ctx context.Context, tx *store.Tx, lease store.Lease, cp, to int64, holes []Hole, stopped *StoppedError) error {
	for _, h := range holes {
		if h.From <= to {
			h.DetectedBy = r.p.Name
			if err := store.Bookkeeping(inside.Key{}, tx).RecordHole(ctx, projrow.Hole(h)); err != nil {
				return err
			}
		}
	}
	if to > cp {
		if err := store.Bookkeeping(inside.Key{}, tx).SetCheckpoint(ctx, r.p.Name, to, &lease); err != nil {
			return err
		}
		if r.stopped {
			// The event the projection halted on applied now: it resumed.
			if err := store.Bookkeeping(inside.Key{}, tx).ResolveQuarantine(ctx, r.p.Name, cp+1, ""); err != nil {
				return err
			}
			if stopped == nil {
				if err := store.Bookkeeping(inside.Key{}, tx).SetProjectionStatus(ctx, r.p.Name, string(StatusActive), ""); err != nil {
					return err
				}
			}
		}
	}
	if stopped != nil {
		return store.Bookkeeping(inside.Key{}, tx).SetProjectionStatus(ctx, r.p.Name, string(StatusStopped), stopped.Error())
	}
	return nil
}

// settled records what a committed batch did to the projection's status.
func (r *Runner) settled(cp, to int64, stopped *StoppedError) {
	switch {
	case stopped != nil:
		r.stopped = true
	case to > cp:
		r.stopped = false
	}
}

// deliver hands events to an outside read model (at least once), then
// moves the checkpoint.
func (r *Runner) deliver(ctx context.Context, lease store.Lease, cp, next int64, events []envelope.Event, holes []Hole) (int64, error) {
	to := next
	var stopped *StoppedError
	type failure struct {
		e        envelope.Event
		err      error
		attempts int
	}
	var failures []failure
	for _, e := range events {
		var err error
		backoff := 10 * time.Millisecond
		attempts := 0
		for attempt := 1; attempt <= r.opts.MaxAttempts; attempt++ {
			attempts = attempt
			// Data at fault fails the same way every time: no retry.
			if err = r.callDeliver(ctx, e); err == nil || ctx.Err() != nil || dataAtFault(err) {
				break
			}
			if attempt < r.opts.MaxAttempts {
				select {
				case <-ctx.Done():
				case <-time.After(backoff):
				}
				backoff *= 2
			}
		}
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
		if err == nil {
			continue
		}
		failures = append(failures, failure{e, err, attempts})
		if r.opts.OnError == Skip {
			r.log.Error("skipping an event the handler keeps failing on; it is quarantined", "position", e.Position, "id", e.ID, "error", err,
				"next", advice(r.p.Name, e.ID, err, false))
			continue
		}
		stopped = &StoppedError{Projection: r.p.Name, Position: e.Position, EventID: e.ID, Attempts: attempts, Err: err}
		to = e.Position - 1
		break
	}
	err := r.s.Update(ctx, func(tx *store.Tx) error {
		if err := store.Bookkeeping(inside.Key{}, tx).CheckFence(ctx, lease); err != nil {
			return err
		}
		for _, f := range failures {
			if err := r.quarantineTx(ctx, tx, f.e, f.err, f.attempts); err != nil {
				return err
			}
		}
		return r.finishTx(ctx, tx, lease, cp, to, holes, stopped)
	})
	if err != nil {
		return 0, err
	}
	r.settled(cp, to, stopped)
	if stopped != nil {
		tracing.Logger(ctx, r.log).Error("projection stopped", "position", stopped.Position, "error", stopped.Err)
		return 0, stopped
	}
	return to - cp, nil
}

func (r *Runner) callDeliver(ctx context.Context, e envelope.Event) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("projection %s panicked on position %d: %v", r.p.Name, e.Position, p)
		}
	}()
	return r.p.Deliver(ctx, e)
}
