package projection

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/go-hclog"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/internal/inside"
	"github.com/eventlite/eventlite/internal/tracing"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/erasure"
)

// ErrUninterpretable marks an event a consumer cannot interpret (unknown
// type or schema version). Such an event is quarantined at once, never
// retried. An envelope.ErrInvalidEvent from decoding counts the same.
var ErrUninterpretable = errors.New("event cannot be interpreted")

// ConsumerOptions define an external consumer: events that arrive from a
// broker or over HTTP, at least once and in any order.
type ConsumerOptions struct {
	// Name identifies the consumer in the inbox and its ledgers. Required.
	Name string
	// Apply writes one event, in aggregate order, to the consumer's read
	// model in the store's database, inside the consumer's transaction.
	// Return an error wrapping ErrUninterpretable for an event it cannot
	// interpret; any other error rolls everything back (the message is
	// redelivered).
	Apply func(ctx context.Context, tx *store.Tx, e envelope.Event) error
	// DeferFor bounds how long an event waits for a version gap to fill
	// before Sweep quarantines it. Default 10 minutes.
	DeferFor time.Duration
	// StartAtFirstSeen lets a consumer that joins late start an aggregate
	// at the first version it sees instead of at version 1.
	StartAtFirstSeen bool
	// Now is the clock for deferral times. Default time.Now.
	Now func() time.Time
	// Logger receives structured logs. Default: none.
	Logger hclog.Logger
	// TracerProvider starts a "process" span per Handle (see Handle).
	// Default: otel's global provider, looked up at each event.
	TracerProvider trace.TracerProvider
	// Propagator reads a message's per-hop headers (Extract). Default:
	// otel's global propagator.
	Propagator propagation.TextMapPropagator
}

// Outcome is what a consumer did with one delivered event.
type Outcome int

const (
	Applied     Outcome = iota // applied (and maybe deferred successors after it)
	Duplicate                  // seen before: acknowledged, nothing changed
	Stale                      // older than what was applied: ignored
	Deferred                   // ahead of a gap: stored until the gap fills
	Conflict                   // another event holds its version: recorded
	Quarantined                // cannot be interpreted: set aside for a person
)

func (o Outcome) String() string {
	return [...]string{"applied", "duplicate", "stale", "deferred", "conflict", "quarantined"}[o]
}

// HandleResult reports one Handle call.
type HandleResult struct {
	Outcome Outcome
	// Drained counts deferred successors applied after this event.
	Drained int
}

// Consumer applies events from outside exactly once and in per-aggregate
// version order: an inbox dedupes, a version ledger orders, a durable
// deferral buffer holds early events.
type Consumer struct {
	s     *store.Store
	opts  ConsumerOptions
	log   hclog.Logger
	trace tracing.Config
}

// NewConsumer checks opts and returns the consumer.
func NewConsumer(s *store.Store, opts ConsumerOptions) (*Consumer, error) {
	if !nameRE.MatchString(opts.Name) {
		return nil, fmt.Errorf("consumer name %q: want a letter then letters, digits or _ (at most 63)", opts.Name)
	}
	if opts.Apply == nil {
		return nil, fmt.Errorf("consumer %s: Apply is required", opts.Name)
	}
	if opts.DeferFor <= 0 {
		opts.DeferFor = 10 * time.Minute
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = hclog.NewNullLogger()
	}
	return &Consumer{s: s, opts: opts, log: opts.Logger.Named("consumer." + opts.Name),
		trace: tracing.Config{TP: opts.TracerProvider, Prop: opts.Propagator}}, nil
}

// Name is the consumer's name.
func (c *Consumer) Name() string { return c.opts.Name }

// eraseForgotten applies erasure to a received event before anything
// stores or applies it: eventlite.subject.forgotten forgets its subject
// in the tenant here too (the key, or a tombstone for a subject whose
// events this store only received; the deferral buffer's copies), and an
// event of a subject forgotten here loses its data and tags (marked
// dataerased),
// so a redelivery after the forget is stored and applied without it.
func (c *Consumer) eraseForgotten(ctx context.Context, tx *store.Tx, tenant string, e envelope.Event) (envelope.Event, error) {
	bk := store.Bookkeeping(inside.Key{}, tx)
	if e.Type == erasure.TypeSubjectForgotten {
		var f erasure.SubjectForgotten
		if err := json.Unmarshal(e.Data, &f); err != nil || f.ErasureKey == "" {
			return e, nil // not ours to act on: Apply sees it as it is
		}
		res, err := bk.ForgetSubject(ctx, tenant, f.ErasureKey)
		if err != nil {
			return e, err
		}
		if !res.Already {
			c.log.Info("subject forgotten on receipt", "tenant", tenant, "copies", res.Copies, "tombstone", res.Tombstone)
		}
		return e, nil
	}
	subject, _ := e.Extensions[envelope.ExtErasureKey].(string)
	if subject == "" || (envelope.Erased(e) && len(e.Tags) == 0) {
		return e, nil
	}
	forgotten, err := bk.SubjectForgotten(ctx, tenant, subject)
	if err != nil || !forgotten {
		return e, err
	}
	ext := make(map[string]any, len(e.Extensions)+1)
	for k, v := range e.Extensions {
		ext[k] = v
	}
	ext[envelope.ExtDataErased] = true
	// Its tags go with its data, as Forget erases them from stored events.
	e.Extensions, e.Data, e.Tags = ext, nil, nil
	return e, nil
}

func tenantOf(e envelope.Event) string {
	if e.Tenant == "" {
		return "default"
	}
	return e.Tenant
}

// handle is Handle without its span.
func (c *Consumer) handle(ctx context.Context, e envelope.Event) (HandleResult, error) {
	var res HandleResult
	err := c.s.Update(ctx, func(tx *store.Tx) error {
		res = HandleResult{}
		tenant := tenantOf(e)
		fresh, err := store.Bookkeeping(inside.Key{}, tx).InboxInsert(ctx, inside.InboxMessage{Tenant: tenant, Consumer: c.opts.Name, Source: e.Source, MessageID: e.ID})
		if err != nil {
			return err
		}
		if !fresh {
			res.Outcome = Duplicate
			return store.Bookkeeping(inside.Key{}, tx).CountConsumer(ctx, c.opts.Name, 0, 1, 0)
		}
		if e, err = c.eraseForgotten(ctx, tx, tenant, e); err != nil {
			return err
		}
		if e.Stream == "" || e.StreamVersion == 0 {
			// No aggregate order to keep: dedupe only.
			res.Outcome, err = c.applyTx(ctx, tx, e)
			return err
		}
		cur, curID, seen, err := store.Bookkeeping(inside.Key{}, tx).ConsumerVersion(ctx, tenant, c.opts.Name, e.Stream)
		if err != nil {
			return err
		}
		if !seen && c.opts.StartAtFirstSeen {
			cur = e.StreamVersion - 1
		}
		gap, restored := restoredGap(e)
		switch v := e.StreamVersion; {
		case restored && cur+1 >= gap.From && cur < v:
			// A restore removed the versions up to v-1 that this
			// consumer has not applied: none will ever come.
			if err := c.skipRestoredTx(ctx, tx, e, gap); err != nil {
				return err
			}
			res.Outcome = Applied
			res.Drained, err = c.drainTx(ctx, tx, tenant, e.Stream, v)
			return err
		case restored && v > cur+1:
			// Events before the restored range are missing: it waits
			// in the deferral buffer at the first version it stands
			// for, which the event before it drains.
			b, _ := e.MarshalJSON()
			existing, clash, err := store.Bookkeeping(inside.Key{}, tx).Defer(ctx, inside.Deferred{
				Consumer: c.opts.Name, Tenant: tenant, Subject: e.Stream, Version: gap.From, EventID: e.ID, Event: b,
				Expected: cur + 1, FirstSeen: c.opts.Now(),
				Reason: fmt.Sprintf("version gap: expected %d, got a restore's announcement that versions %d-%d are gone", cur+1, gap.From, gap.To),
			})
			if err != nil {
				return err
			}
			if clash && existing.EventID != e.ID {
				res.Outcome = Conflict
				return c.conflictTx(ctx, tx, e, existing.EventID)
			}
			res.Outcome = Deferred
			return nil
		case v == cur+1:
			res.Outcome, err = c.applyTx(ctx, tx, e)
			if err != nil || res.Outcome != Applied {
				return err
			}
			res.Drained, err = c.drainTx(ctx, tx, tenant, e.Stream, v)
			return err
		case v <= cur:
			if v == cur && curID != e.ID {
				res.Outcome = Conflict
				return c.conflictTx(ctx, tx, e, curID)
			}
			res.Outcome = Stale
			return store.Bookkeeping(inside.Key{}, tx).CountConsumer(ctx, c.opts.Name, 0, 0, 1)
		default:
			b, _ := e.MarshalJSON()
			existing, clash, err := store.Bookkeeping(inside.Key{}, tx).Defer(ctx, inside.Deferred{
				Consumer: c.opts.Name, Tenant: tenant, Subject: e.Stream, Version: v, EventID: e.ID, Event: b,
				Expected: cur + 1, FirstSeen: c.opts.Now(), Reason: fmt.Sprintf("version gap: expected %d, got %d", cur+1, v),
			})
			if err != nil {
				return err
			}
			if clash && existing.EventID != e.ID {
				res.Outcome = Conflict
				return c.conflictTx(ctx, tx, e, existing.EventID)
			}
			res.Outcome = Deferred
			return nil
		}
	})
	if err != nil {
		return HandleResult{}, fmt.Errorf("consumer %s: event %s: %w", c.opts.Name, e.ID, err)
	}
	tracing.Logger(ctx, c.log).Debug("handled", "id", e.ID, "stream", e.Stream, "version", e.StreamVersion, "outcome", res.Outcome.String(), "drained", res.Drained)
	return res, nil
}

// applyTx applies e under a savepoint and moves the aggregate's version.
// An uninterpretable event is quarantined instead.
func (c *Consumer) applyTx(ctx context.Context, tx *store.Tx, e envelope.Event) (Outcome, error) {
	cause, err := c.applyOnceTx(ctx, tx, e)
	if err != nil {
		return 0, err
	}
	if cause != nil {
		if errors.Is(cause, ErrUninterpretable) || errors.Is(cause, envelope.ErrInvalidEvent) {
			b, _ := e.MarshalJSON()
			tracing.Logger(ctx, c.log).Warn("quarantining an event this consumer cannot interpret", "id", e.ID, "type", e.Type, "error", cause,
				"next", advice(c.opts.Name, e.ID, cause, false))
			return Quarantined, quarantine(ctx, tx, QuarantineEntry{
				Consumer: c.opts.Name, Reason: ReasonUninterpretable, Tenant: tenantOf(e), Subject: e.Stream,
				Version: e.StreamVersion, EventID: e.ID, Event: b, Error: cause.Error(), Attempts: 1,
			})
		}
		return 0, cause
	}
	return Applied, nil
}

// applyOnceTx applies e in a nested scope (tx.Nested) and moves the
// aggregate's version. cause is Apply's error (its writes undone); err is
// a failure of the transaction itself (should the scope not be undone,
// the transaction is broken and commits nothing: store.Tx.Nested).
func (c *Consumer) applyOnceTx(ctx context.Context, tx *store.Tx, e envelope.Event) (cause, err error) {
	var applyErr error
	err = tx.Nested(ctx, func() error {
		applyErr = func() (err error) {
			defer func() {
				if p := recover(); p != nil {
					err = fmt.Errorf("consumer %s panicked on event %s: %v", c.opts.Name, e.ID, p)
				}
			}()
			return c.opts.Apply(ctx, tx, e)
		}()
		return applyErr
	})
	switch {
	case applyErr != nil && err == applyErr:
		return applyErr, nil
	case err != nil:
		return nil, err
	}
	if e.Stream != "" && e.StreamVersion > 0 {
		if err := store.Bookkeeping(inside.Key{}, tx).SetConsumerVersion(ctx, inside.ConsumerVersion{Tenant: tenantOf(e), Consumer: c.opts.Name, Subject: e.Stream, Version: e.StreamVersion, EventID: e.ID}); err != nil {
			return nil, err
		}
	}
	return nil, store.Bookkeeping(inside.Key{}, tx).CountConsumer(ctx, c.opts.Name, 1, 0, 0)
}

// drainTx applies the deferred successors of version that are now in
// order, and returns how many it applied.
func (c *Consumer) drainTx(ctx context.Context, tx *store.Tx, tenant, subject string, version int64) (int, error) {
	n := 0
	for {
		d, ok, err := store.Bookkeeping(inside.Key{}, tx).TakeDeferred(ctx, tenant, c.opts.Name, subject, version+1)
		if err != nil || !ok {
			return n, err
		}
		e, err := envelope.DecodeStoredJSON(d.Event)
		if err != nil {
			return n, fmt.Errorf("deferred event %s does not decode: %w", d.EventID, err)
		}
		if gap, ok := restoredGap(e); ok {
			if err := c.skipRestoredTx(ctx, tx, e, gap); err != nil {
				return n, err
			}
			n++
			version = e.StreamVersion
			spanReleased(ctx, e)
			continue
		}
		out, err := c.applyTx(ctx, tx, e)
		if err != nil {
			return n, err
		}
		if out != Applied {
			return n, nil // quarantined: the aggregate waits for a person
		}
		n++
		version++
		spanReleased(ctx, e)
	}
}

// restoredGap reads the versions an eventlite.stream.restored event
// announces as gone (store.StreamRestored); ok is false for any other
// event, and for one whose range is not below the event's own version.
func restoredGap(e envelope.Event) (store.StreamRestored, bool) {
	var r store.StreamRestored
	if e.Type != store.TypeStreamRestored || e.Stream == "" || json.Unmarshal(e.Data, &r) != nil {
		return r, false
	}
	return r, r.From >= 1 && r.From <= r.To && r.To < e.StreamVersion
}

// skipRestoredTx moves the aggregate's version to the restored event's:
// the versions it announces as gone are skipped, and Apply is not
// called (the event is the store's, not the domain's).
func (c *Consumer) skipRestoredTx(ctx context.Context, tx *store.Tx, e envelope.Event, gap store.StreamRestored) error {
	tracing.Logger(ctx, c.log).Info("skipping the versions a restore removed", "stream", e.Stream, "from", gap.From, "to", gap.To, "version", e.StreamVersion)
	if err := store.Bookkeeping(inside.Key{}, tx).SetConsumerVersion(ctx, inside.ConsumerVersion{Tenant: tenantOf(e), Consumer: c.opts.Name, Subject: e.Stream, Version: e.StreamVersion, EventID: e.ID}); err != nil {
		return err
	}
	return store.Bookkeeping(inside.Key{}, tx).CountConsumer(ctx, c.opts.Name, 1, 0, 0)
}

func (c *Consumer) conflictTx(ctx context.Context, tx *store.Tx, e envelope.Event, keptID string) error {
	b, _ := e.MarshalJSON()
	tracing.Logger(ctx, c.log).Warn("version conflict: another event holds this version; the read model is unchanged",
		"stream", e.Stream, "version", e.StreamVersion, "kept", keptID, "conflicting", e.ID)
	return store.Bookkeeping(inside.Key{}, tx).RecordConflict(ctx, inside.Conflict{
		Consumer: c.opts.Name, Tenant: tenantOf(e), Subject: e.Stream, Version: e.StreamVersion,
		KeptEventID: keptID, ConflictingID: e.ID, ConflictingEvent: b,
	})
}

// Sweep moves events deferred longer than DeferFor to quarantine, with the
// evidence (expected and got versions, how long they waited). They are
// never applied or dropped silently. It returns how many it moved.
func (c *Consumer) Sweep(ctx context.Context) (int, error) {
	now := c.opts.Now()
	old, err := Consumers(c.s).Deferred(ctx, c.opts.Name, now.Add(-c.opts.DeferFor))
	if err != nil {
		return 0, err
	}
	moved := 0
	for _, d := range old {
		took := false
		err := c.s.Update(ctx, func(tx *store.Tx) error {
			took = false
			taken, ok, err := store.Bookkeeping(inside.Key{}, tx).TakeDeferred(ctx, d.Tenant, d.Consumer, d.Subject, d.Version)
			if err != nil || !ok || taken.EventID != d.EventID {
				return err // applied or swept meanwhile
			}
			took = true
			cur, _, _, err := store.Bookkeeping(inside.Key{}, tx).ConsumerVersion(ctx, d.Tenant, c.opts.Name, d.Subject)
			if err != nil {
				return err
			}
			evidence, _ := json.Marshal(map[string]any{
				"expected": cur + 1, "got": d.Version, "first_seen": d.FirstSeen.Format(time.RFC3339Nano),
				"waited_seconds": now.Sub(d.FirstSeen).Seconds(),
			})
			return quarantine(ctx, tx, QuarantineEntry{
				Consumer: c.opts.Name, Reason: ReasonDeferredTooLong, Tenant: d.Tenant, Subject: d.Subject,
				Version: d.Version, EventID: d.EventID, Event: d.Event, Attempts: 1, Evidence: string(evidence),
				Error: fmt.Sprintf("version %d waited %s for version %d, longer than %s", d.Version, now.Sub(d.FirstSeen).Round(time.Second), cur+1, c.opts.DeferFor),
			})
		})
		if err != nil {
			return moved, fmt.Errorf("consumer %s: sweep: %w", c.opts.Name, err)
		}
		if took {
			moved++ // counted once the quarantine committed
		}
	}
	if moved > 0 {
		c.log.Warn("quarantined events that waited too long for a version gap", "count", moved,
			"next", fmt.Sprintf("'eventlite quarantine list --name %s' shows them; once the gap filled, 'eventlite quarantine retry %s EVENT_ID' applies one on the next pass, or 'eventlite quarantine skip %s EVENT_ID' gives it up", c.opts.Name, c.opts.Name, c.opts.Name))
	}
	return moved, nil
}

// Stats reads the consumer's counters and queues.
func (c *Consumer) Stats(ctx context.Context) (ConsumerStats, error) {
	return Consumers(c.s).Stats(ctx, c.opts.Name)
}

// QuarantineMessage sets aside a message that could not be handled, as
// raw bytes under id, with the error and the deliveries it took; a
// broker's consumer loop (natsjs.RunJetStream) calls it.
func (c *Consumer) QuarantineMessage(ctx context.Context, reason QuarantineReason, id string, raw []byte, cause error, attempts int) error {
	ctx, span := c.quarantineSpan(ctx, reason, id)
	if span != nil {
		span.RecordError(cause)
		defer span.End()
	}
	tracing.Logger(ctx, c.log).Warn("quarantining a message", "reason", reason, "id", id, "error", cause, "next", advice(c.opts.Name, id, cause, false))
	return c.s.Update(ctx, func(tx *store.Tx) error {
		return quarantine(ctx, tx, QuarantineEntry{
			Consumer: c.opts.Name, Reason: reason, EventID: id, Event: raw, Error: cause.Error(), Attempts: attempts,
		})
	})
}
