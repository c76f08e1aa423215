package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/store/internal/driver"
)

// Outbox is the store's outbox and its dead letters, reached with
// Store.Outbox: the relay's reads, the operator's dead-letter actions and
// the outbox's counters. The relay's writes (Bookkeeping: MarkPublished,
// RecordFailure, DeadLetter) run in its Update transaction.
type Outbox struct{ s *Store }

// Outbox returns the store's outbox.
func (s *Store) Outbox() *Outbox { return &Outbox{s: s} }

// The outbox is the relay's ledger (migrations 0001, 0004 and 0015): an
// append writes nothing to it. A row exists only for an event the relay
// settled (published, or discarded by an operator) or that failed
// (attempts, next attempt, dead letter). The watermark W
// (outbox_watermark.settled) says every event at or below it is settled;
// an event is pending when it lies above W and has no row, or a row
// neither published nor discarded. The relay reads pending events in
// position order, publishes them, and settles each batch in one fenced
// transaction (Bookkeeping: MarkPublished, RecordFailure, DeadLetter), which
// moves W on over the settled positions. A dead letter parks its stream
// until an operator retries or discards it.
//
// The cursor C (outbox_watermark.scanned) keeps the relay's reads short
// while a stream is parked (W cannot pass its dead letter): every pending
// event in (W, max(W, C)] belongs to a stream with a failed row at or
// below it. A relay reads above C, and reaches such a stream's events
// again from the failed row's position once the row is due; an operator's
// retry or discard, or the publication of a row that had failed, lowers C
// below that row, so the stream's waiting events are read again.

// OutboxRow is a pending event and its outbox row's failure facts (all
// zero when it never failed: it has no row).
type OutboxRow struct {
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

// OutboxReadOptions selects pending events.
type OutboxReadOptions struct {
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
// on (see the outbox's comment): it does not visit the events published
// since a parked stream's dead letter.
func (o *Outbox) Read(ctx context.Context, opts OutboxReadOptions) ([]OutboxRow, error) {
	s := o.s
	if opts.Limit <= 0 {
		opts.Limit = 256
	}
	if opts.Now.IsZero() {
		opts.Now = time.Now()
	}
	rows, err := s.ex.ReadOutbox(ctx, s.rdb, opts.Now.UnixNano(), opts.After, opts.Limit)
	if err != nil {
		return nil, fmt.Errorf("read outbox: %w", mapErr(err))
	}
	out := make([]OutboxRow, len(rows))
	for i := range rows {
		out[i] = OutboxRow(rows[i])
	}
	for i := range out {
		if subject := erasureKeyOf(&out[i].Event); subject != "" {
			if err := s.keys.openEvent(ctx, s.rdb, true, &out[i].Event, subject); err != nil {
				return nil, fmt.Errorf("read outbox: %w", err)
			}
		}
	}
	return out, nil
}

// NextAttempt returns the earliest time at which a row that failed
// is due for another attempt, and false when no row waits for one.
func (o *Outbox) NextAttempt(ctx context.Context) (time.Time, bool, error) {
	next, ok, err := o.s.ex.OutboxNextAttempt(ctx, o.s.rdb)
	if err != nil {
		return time.Time{}, false, fmt.Errorf("read outbox: %w", mapErr(err))
	}
	if !ok {
		return time.Time{}, false, nil
	}
	return time.Unix(0, next), true, nil
}

// Published is one row the broker accepted.
type Published struct {
	Position int64
	// BrokerSequence is the broker's sequence for the message (JetStream's
	// stream sequence); 0 when the destination has none.
	BrokerSequence uint64
}

// MarkPublished marks rows published under the relay's lease, in an
// Update closure: it fails with ErrStaleFence, writing nothing, unless
// lease is current. A row already published or discarded is left as it
// is. It returns how many rows it marked.
func (tx txBook) MarkPublished(ctx context.Context, lease Lease, rows []Published) (int, error) {
	if len(rows) == 0 {
		return 0, nil
	}
	if err := tx.check(); err != nil {
		return 0, err
	}
	ps := make([]driver.Published, len(rows))
	for i, r := range rows {
		ps[i] = driver.Published(r)
	}
	n, held, err := tx.s.ex.MarkPublished(ctx, tx.s.wconn, fenceOf(lease), tx.now, ps)
	if err != nil {
		return 0, fmt.Errorf("mark outbox rows published: %w", mapErr(err))
	}
	if !held {
		return 0, staleFence(lease)
	}
	return int(n), nil
}

// fenceOf is the fence a relay write must hold.
func fenceOf(l Lease) driver.Fence {
	return driver.Fence{Resource: l.Resource, Owner: l.Owner, Token: l.Token}
}

// staleFence is CheckFence's error for a lease that is not current.
func staleFence(l Lease) error {
	return fmt.Errorf("%w: %q token %d (owner %s)", ErrStaleFence, l.Resource, l.Token, l.Owner)
}

// driverFailures converts failures for the driver.
func driverFailures(failures []Failure) []driver.Failure {
	fs := make([]driver.Failure, len(failures))
	for i, f := range failures {
		fs[i] = driver.Failure{Position: f.Position, Error: f.Error, NextAttemptAt: f.NextAttemptAt.UnixNano()}
	}
	return fs
}

// Failure is one failed publish attempt.
type Failure struct {
	Position int64
	// Error says what went wrong; it is kept on the row.
	Error string
	// NextAttemptAt is when RecordFailure lets the row (and its stream)
	// be tried again. DeadLetter ignores it.
	NextAttemptAt time.Time
}

// RecordFailure records a failed attempt on each row, under the relay's
// lease (ErrStaleFence otherwise, writing nothing): attempts grow by one,
// the error and times are kept, and the row and every later row of its
// stream wait until NextAttemptAt. Rows no longer pending are skipped.
func (tx txBook) RecordFailure(ctx context.Context, lease Lease, failures []Failure) error {
	if len(failures) == 0 {
		return nil
	}
	if err := tx.check(); err != nil {
		return err
	}
	held, err := tx.s.ex.RecordFailures(ctx, tx.s.wconn, fenceOf(lease), tx.now, driverFailures(failures))
	if err != nil {
		return fmt.Errorf("record outbox failures: %w", mapErr(err))
	}
	if !held {
		return staleFence(lease)
	}
	return nil
}

// DeadLetter turns rows into dead letters, under the relay's lease
// (ErrStaleFence otherwise, writing nothing): the error, attempts (grown
// by one) and times are kept, and the row's stream is parked until an
// operator retries or discards it. Rows no longer pending are skipped.
func (tx txBook) DeadLetter(ctx context.Context, lease Lease, failures []Failure) error {
	if len(failures) == 0 {
		return nil
	}
	if err := tx.check(); err != nil {
		return err
	}
	held, err := tx.s.ex.MarkDead(ctx, tx.s.wconn, fenceOf(lease), tx.now, driverFailures(failures))
	if err != nil {
		return fmt.Errorf("dead-letter outbox rows: %w", mapErr(err))
	}
	if !held {
		return staleFence(lease)
	}
	return nil
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
	ds, err := o.s.ex.DeadLetters(ctx, o.s.rdb, tenant)
	if err != nil {
		return nil, fmt.Errorf("list dead letters: %w", mapErr(err))
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
// have failed). errors.Is(err, ErrNotFound) holds for it.
type DeadLetterNotFoundError struct {
	Tenant  string
	EventID string
}

func (e *DeadLetterNotFoundError) Error() string {
	return fmt.Sprintf("no dead letter with event id %q (tenant %s)", e.EventID, e.Tenant)
}

// Unwrap lets errors.Is(err, ErrNotFound) match.
func (e *DeadLetterNotFoundError) Unwrap() error { return ErrNotFound }

// Outbox.RetryDeadLetter re-queues a dead letter with its event id unchanged (so
// the broker and consumers dedupe a copy that did arrive): its dead state
// and attempts are cleared and its stream is unparked; the relay publishes
// it, then the stream's waiting events, in order. An operator action, not
// fenced; it is logged. Unknown ids return a *DeadLetterNotFoundError.
func (o *Outbox) RetryDeadLetter(ctx context.Context, tenant, eventID string) (DeadLetter, error) {
	s := o.s
	if err := envelope.ValidateTenant(tenant); err != nil {
		return DeadLetter{}, err
	}
	var d DeadLetter
	err := s.Update(ctx, func(tx *Tx) error {
		if eventID == "" { // the driver would read it as every dead letter
			return &DeadLetterNotFoundError{Tenant: tenant, EventID: eventID}
		}
		ds, err := s.ex.RequeueDeadLetters(ctx, s.wconn, tenant, eventID)
		if err != nil {
			return mapErr(err)
		}
		if len(ds) == 0 {
			return &DeadLetterNotFoundError{Tenant: tenant, EventID: eventID}
		}
		d = DeadLetter(ds[0])
		return nil
	})
	if err != nil {
		return DeadLetter{}, fmt.Errorf("retry dead letter: %w", err)
	}
	s.log.Warn("dead letter re-queued by an operator", "tenant", d.Tenant, "event_id", d.EventID, "stream", d.Stream, "version", d.Version, "position", d.Position, "attempts", d.Attempts, "error", d.Error)
	return d, nil
}

// Outbox.RetryDeadLetters re-queues every dead letter of a tenant (every
// tenant's when tenant is "") as Outbox.RetryDeadLetter does, in one transaction,
// and returns them.
func (o *Outbox) RetryDeadLetters(ctx context.Context, tenant string) ([]DeadLetter, error) {
	s := o.s
	if tenant != "" {
		if err := envelope.ValidateTenant(tenant); err != nil {
			return nil, err
		}
	}
	var ds []DeadLetter
	err := s.Update(ctx, func(tx *Tx) error {
		rows, err := s.ex.RequeueDeadLetters(ctx, s.wconn, tenant, "")
		ds = deadLetters(rows)
		return mapErr(err)
	})
	if err != nil {
		return nil, fmt.Errorf("retry dead letters: %w", err)
	}
	for _, d := range ds {
		s.log.Warn("dead letter re-queued by an operator", "tenant", d.Tenant, "event_id", d.EventID, "stream", d.Stream, "version", d.Version, "position", d.Position, "attempts", d.Attempts, "error", d.Error)
	}
	return ds, nil
}

// Outbox.DiscardDeadLetter gives a dead letter up for good: it will never be
// published, and its stream is unparked (the stream's later events go
// out). An explicit operator decision, not fenced; it is logged and the
// row keeps the time. Unknown ids return a *DeadLetterNotFoundError.
func (o *Outbox) DiscardDeadLetter(ctx context.Context, tenant, eventID string) (DeadLetter, error) {
	s := o.s
	if err := envelope.ValidateTenant(tenant); err != nil {
		return DeadLetter{}, err
	}
	var d DeadLetter
	err := s.Update(ctx, func(tx *Tx) error {
		dd, ok, err := s.ex.DiscardDeadLetter(ctx, s.wconn, tx.now, tenant, eventID)
		if err != nil {
			return mapErr(err)
		}
		if !ok {
			return &DeadLetterNotFoundError{Tenant: tenant, EventID: eventID}
		}
		d = DeadLetter(dd)
		return nil
	})
	if err != nil {
		return DeadLetter{}, fmt.Errorf("discard dead letter: %w", err)
	}
	s.log.Warn("dead letter discarded by an operator: it will never be published", "tenant", d.Tenant, "event_id", d.EventID, "stream", d.Stream, "version", d.Version, "position", d.Position, "attempts", d.Attempts, "error", d.Error)
	return d, nil
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
	ps, err := o.s.ex.ParkedStreams(ctx, o.s.rdb, tenant)
	if err != nil {
		return nil, fmt.Errorf("list parked streams: %w", mapErr(err))
	}
	out := make([]ParkedStream, len(ps))
	for i, p := range ps {
		out[i] = ParkedStream(p)
	}
	return out, nil
}

// OutboxStats describes the outbox.
type OutboxStats struct {
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

// Stats reads the outbox's depth, lag and totals. It visits the
// pending events (not the published ones).
func (o *Outbox) Stats(ctx context.Context) (OutboxStats, error) {
	s := o.s
	var st OutboxStats
	wrap := func(err error) error { return fmt.Errorf("outbox stats: %w", mapErr(err)) }
	// One read transaction, so the figures agree with each other.
	tx, err := s.rdb.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return st, wrap(err)
	}
	defer func() { _ = tx.Rollback() }()
	f, err := s.ex.OutboxStats(ctx, tx)
	if err != nil {
		return st, wrap(err)
	}
	st.Pending, st.Oldest = f.Pending, f.Oldest
	if !st.Oldest.IsZero() {
		st.Lag = max(s.opts.Now().Sub(st.Oldest), 0)
	}
	st.DeadLetters, st.ParkedStreams, st.Parked = f.DeadLetters, f.ParkedStreams, f.Parked
	c := f.Counters
	st.Published, st.Retried, st.Requeued = c["published"], c["retried"], c["requeued"]
	st.DeadLettered, st.Discarded = c["dead_lettered"], c["discarded"]
	return st, nil
}

// OutboxEntry is one event's outbox state, whatever it is: its row as
// stored, or zero fields for a pending event that has none (it never
// failed).
type OutboxEntry struct {
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
func (o *Outbox) Entries(ctx context.Context, after int64, limit int) ([]OutboxEntry, error) {
	s := o.s
	if limit <= 0 {
		limit = pageSize
	}
	xs, err := s.ex.OutboxEntries(ctx, s.rdb, after, limit)
	if err != nil {
		return nil, fmt.Errorf("read outbox entries: %w", mapErr(err))
	}
	if xs == nil {
		return nil, nil
	}
	out := make([]OutboxEntry, len(xs))
	for i, x := range xs {
		out[i] = OutboxEntry(x)
	}
	return out, nil
}
