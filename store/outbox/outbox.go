package outbox

import (
	"context"
	"fmt"
	"time"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/internal/inside"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/internal/driver"
)

// Outbox is a store's outbox and its dead letters: the relay's reads, the
// operator's dead-letter actions and the outbox's counters. For returns
// it. The relay's writes (marking rows published, failed or dead) are not
// here: they run in the relay's fenced transaction.
type Outbox struct{ s *store.Store }

// For returns the outbox of s.
func For(s *store.Store) *Outbox { return &Outbox{s: s} }

// Row is a pending event and its outbox row's failure facts (all zero
// when it never failed: it has no row).
type Row struct {
	Event envelope.Event
	// Attempts counts the failed publish attempts so far (a broker that
	// was down counts none).
	Attempts int
	// FirstFailedAt is the time of the first failed attempt; zero when
	// the row never failed.
	FirstFailedAt time.Time
	// LastError is the error of the last failed attempt, "" when none.
	LastError string
}

// ReadOptions select pending events.
type ReadOptions struct {
	// After reads events above this position (0: from the start, that is
	// from the relay's cursor and any failed row due again). A stream
	// with a row that failed before at or below After is left out: the
	// read cannot return that row, so the stream's later rows must wait.
	// (Pending rows at or below After that never failed are the caller's
	// to know about: a relay reads on from its last batch only when that
	// batch was published whole.)
	After int64
	// Limit caps the rows returned. Default 256.
	Limit int
	// Now is the relay's clock: a row whose next attempt is due after Now
	// holds back its stream. Default time.Now().
	Now time.Time
}

// Read returns pending events with their outbox rows in position
// order: events neither published nor discarded, minus every event of a
// stream that is parked by a dead letter or whose failed row waits for
// its next attempt (so a stream is published in order). It reads through
// the read pool, outside any write transaction, from the relay's cursor
// on: it does not visit the events published since a parked stream's
// dead letter.
func (o *Outbox) Read(ctx context.Context, opts ReadOptions) ([]Row, error) {
	if opts.Limit <= 0 {
		opts.Limit = 256
	}
	if opts.Now.IsZero() {
		opts.Now = time.Now()
	}
	rows, err := store.Inner(inside.Key{}, o.s).ReadOutbox(ctx, opts.Now, opts.After, opts.Limit)
	if err != nil {
		return nil, err
	}
	out := make([]Row, len(rows))
	for i := range rows {
		out[i] = Row(rows[i])
	}
	return out, nil
}

// NextAttempt returns the earliest time at which a row that failed
// is due for another attempt, and false when no row waits for one.
func (o *Outbox) NextAttempt(ctx context.Context) (time.Time, bool, error) {
	return store.Inner(inside.Key{}, o.s).OutboxNextAttempt(ctx)
}

// DeadLetter is an outbox row the relay gave up on. It parks its stream.
type DeadLetter struct {
	Tenant   string
	EventID  string
	Stream   string
	Version  int64
	Position int64
	Type     string
	// Attempts is the number of failed attempts.
	Attempts int
	// Error is the last attempt's error.
	Error       string
	FirstFailed time.Time
	LastFailed  time.Time
	DeadAt      time.Time
}

// DeadLetters lists a tenant's dead letters (every tenant's when tenant is
// "") in position order.
func (o *Outbox) DeadLetters(ctx context.Context, tenant string) ([]DeadLetter, error) {
	if tenant != "" {
		if err := envelope.ValidateTenant(tenant); err != nil {
			return nil, err
		}
	}
	ds, err := store.Inner(inside.Key{}, o.s).DeadLetters(ctx, tenant)
	if err != nil {
		return nil, err
	}
	return deadLetters(ds), nil
}

func deadLetters(ds []driver.DeadLetter) []DeadLetter {
	if ds == nil {
		return nil
	}
	out := make([]DeadLetter, len(ds))
	for i, d := range ds {
		out[i] = DeadLetter(d)
	}
	return out
}

// DeadLetterNotFoundError: no dead letter has this event id in this
// tenant (the event may not exist, may have been published, or may not
// have failed). errors.Is(err, store.ErrNotFound) holds for it.
type DeadLetterNotFoundError struct {
	Tenant  string
	EventID string
}

func (e *DeadLetterNotFoundError) Error() string {
	return fmt.Sprintf("no dead letter with event id %q (tenant %s)", e.EventID, e.Tenant)
}

// Unwrap lets errors.Is(err, store.ErrNotFound) match.
func (e *DeadLetterNotFoundError) Unwrap() error { return store.ErrNotFound }

// RetryDeadLetter re-queues a dead letter with its event id unchanged (so
// the broker and consumers dedupe a copy that did arrive): its dead state
// and attempts are cleared and its stream is unparked; the relay publishes
// it, then the stream's waiting events, in order. An operator action, not
// fenced; it is logged. Unknown ids return a *DeadLetterNotFoundError.
func (o *Outbox) RetryDeadLetter(ctx context.Context, tenant, eventID string) (DeadLetter, error) {
	if err := envelope.ValidateTenant(tenant); err != nil {
		return DeadLetter{}, err
	}
	if eventID == "" { // the store would read it as every dead letter
		return DeadLetter{}, fmt.Errorf("retry dead letter: %w", &DeadLetterNotFoundError{Tenant: tenant, EventID: eventID})
	}
	ds, err := store.Inner(inside.Key{}, o.s).RequeueDeadLetters(ctx, tenant, eventID)
	if err != nil {
		return DeadLetter{}, fmt.Errorf("retry dead letter: %w", err)
	}
	if len(ds) == 0 {
		return DeadLetter{}, fmt.Errorf("retry dead letter: %w", &DeadLetterNotFoundError{Tenant: tenant, EventID: eventID})
	}
	return DeadLetter(ds[0]), nil
}

// RetryDeadLetters re-queues every dead letter of a tenant (every
// tenant's when tenant is "") as RetryDeadLetter does, in one
// transaction, and returns them.
func (o *Outbox) RetryDeadLetters(ctx context.Context, tenant string) ([]DeadLetter, error) {
	if tenant != "" {
		if err := envelope.ValidateTenant(tenant); err != nil {
			return nil, err
		}
	}
	ds, err := store.Inner(inside.Key{}, o.s).RequeueDeadLetters(ctx, tenant, "")
	if err != nil {
		return nil, fmt.Errorf("retry dead letters: %w", err)
	}
	return deadLetters(ds), nil
}

// DiscardDeadLetter gives a dead letter up for good: it will never be
// published, and its stream is unparked (the stream's later events go
// out). An explicit operator decision, not fenced; it is logged and the
// row keeps the time. Unknown ids return a *DeadLetterNotFoundError.
func (o *Outbox) DiscardDeadLetter(ctx context.Context, tenant, eventID string) (DeadLetter, error) {
	if err := envelope.ValidateTenant(tenant); err != nil {
		return DeadLetter{}, err
	}
	d, ok, err := store.Inner(inside.Key{}, o.s).DiscardDeadLetter(ctx, tenant, eventID)
	if err != nil {
		return DeadLetter{}, fmt.Errorf("discard dead letter: %w", err)
	}
	if !ok {
		return DeadLetter{}, fmt.Errorf("discard dead letter: %w", &DeadLetterNotFoundError{Tenant: tenant, EventID: eventID})
	}
	return DeadLetter(d), nil
}

// ParkedStream is a stream whose events wait behind a dead letter.
type ParkedStream struct {
	Tenant string
	Stream string
	// DeadLetter is the position of the stream's first dead letter.
	DeadLetter int64
	// Waiting counts the stream's pending rows, dead letters included.
	Waiting int64
}

// ParkedStreams lists the streams parked by a dead letter, every tenant's
// when tenant is "", in the order of their dead letters.
func (o *Outbox) ParkedStreams(ctx context.Context, tenant string) ([]ParkedStream, error) {
	ps, err := store.Inner(inside.Key{}, o.s).ParkedStreams(ctx, tenant)
	if err != nil {
		return nil, err
	}
	out := make([]ParkedStream, len(ps))
	for i, p := range ps {
		out[i] = ParkedStream(p)
	}
	return out, nil
}

// Stats describe the outbox.
type Stats struct {
	// Pending counts the events not yet published nor discarded: the
	// outbox depth, dead letters and parked events included.
	Pending int64
	// Oldest is when the oldest pending row's event was recorded; zero
	// when nothing is pending. Lag is its age by the store's clock.
	Oldest time.Time
	Lag    time.Duration
	// DeadLetters counts the dead letters waiting for an operator;
	// ParkedStreams the streams they park; Parked the pending rows of
	// those streams (the dead letters included).
	DeadLetters   int64
	ParkedStreams int64
	Parked        int64
	// Totals since the outbox began: rows published, failed attempts
	// scheduled for a retry, dead letters re-queued by an operator, rows
	// dead-lettered, dead letters discarded.
	Published    int64
	Retried      int64
	Requeued     int64
	DeadLettered int64
	Discarded    int64
}

// Stats reads the outbox's depth, lag and totals, in one read
// transaction so that they agree. It visits the pending events (not the
// published ones).
func (o *Outbox) Stats(ctx context.Context) (Stats, error) {
	f, now, err := store.Inner(inside.Key{}, o.s).OutboxStats(ctx)
	if err != nil {
		return Stats{}, err
	}
	st := Stats{Pending: f.Pending, Oldest: f.Oldest}
	if !st.Oldest.IsZero() {
		st.Lag = max(now.Sub(st.Oldest), 0)
	}
	st.DeadLetters, st.ParkedStreams, st.Parked = f.DeadLetters, f.ParkedStreams, f.Parked
	c := f.Counters
	st.Published, st.Retried, st.Requeued = c["published"], c["retried"], c["requeued"]
	st.DeadLettered, st.Discarded = c["dead_lettered"], c["discarded"]
	return st, nil
}

// Entry is one event's outbox state, whatever it is: its row as stored,
// or zero fields for a pending event that has none (it never failed).
type Entry struct {
	Position      int64
	Tenant        string
	EventID       string
	Stream        string
	Version       int64
	Attempts      int
	LastError     string
	NextAttemptAt time.Time // zero when none is scheduled
	FirstFailedAt time.Time
	LastFailedAt  time.Time
	DeadAt        time.Time // zero unless a dead letter
	DiscardedAt   time.Time // zero unless discarded
	PublishedAt   time.Time // zero until published
	RecordedAt    time.Time // when the event was committed
	// BrokerSequence is the broker's sequence (0 when none); PublishedToken
	// is the relay lease token under which the row was marked published.
	BrokerSequence uint64
	PublishedToken int64
}

// Entries returns the outbox state of up to limit events above position
// after, in position order, published or not: for reconciliation,
// diagnostics and tests. It reads every event it returns.
func (o *Outbox) Entries(ctx context.Context, after int64, limit int) ([]Entry, error) {
	xs, err := store.Inner(inside.Key{}, o.s).OutboxEntries(ctx, after, limit)
	if err != nil || xs == nil {
		return nil, err
	}
	out := make([]Entry, len(xs))
	for i, x := range xs {
		out[i] = Entry(x)
	}
	return out, nil
}
