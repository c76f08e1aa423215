package projection

import (
	"context"
	"errors"
	"fmt"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/internal/inside"
	"github.com/eventlite/eventlite/store"
)

// Quarantined events are listed, retried and skipped by the name of the
// projection or consumer and the event id (eventlite quarantine, or
// Quarantine(s): Open, Retry and Skip). A retry is
// a mark: the runner or consumer applies the event again on its next
// pass, since only the service can run its handlers.

// errRetryGone: the entry was skipped or taken while its retry was being
// applied; the attempt is rolled back.
var errRetryGone = errors.New("quarantine entry no longer marked for retry")

// dataAtFault reports whether cause says the event itself does not decode
// (or cannot be interpreted), as opposed to a handler failing on it.
func dataAtFault(cause error) bool {
	return errors.Is(cause, envelope.ErrInvalidEvent) || errors.Is(cause, ErrUninterpretable)
}

// advice says what a person does about a quarantined event.
func advice(name, eventID string, cause error, stopped bool) string {
	skip := fmt.Sprintf("'eventlite quarantine skip %s %s'", name, eventID)
	if dataAtFault(cause) {
		return "the event's data is at fault (it does not decode or cannot be interpreted), not the handler: give it up with " + skip +
			", or correct the decoder and retry it with 'eventlite quarantine retry " + name + " " + eventID + "'"
	}
	if stopped {
		return "fix the handler and restart the runner: it resumes at that event; or give the event up with " + skip
	}
	return fmt.Sprintf("fix the handler, then 'eventlite quarantine retry %s %s' applies it again on the next pass; or give it up with %s", name, eventID, skip)
}

// retryPass applies again the quarantined events an operator marked for
// retry that the runner has already passed (Skip mode); those ahead of
// the checkpoint come in order anyway. Each commits in its own fenced
// transaction: applied, the entry is resolved as retried; failed, it
// stays quarantined with one more attempt and the mark cleared.
func (r *Runner) retryPass(ctx context.Context, lease store.Lease) error {
	qs, err := Quarantine(r.s).Retries(ctx, r.p.Name)
	if err != nil || len(qs) == 0 {
		return err
	}
	cp, err := Records(r.s).Checkpoint(ctx, r.p.Name)
	if err != nil {
		return err
	}
	for _, q := range qs {
		if q.Position <= 0 || q.Position > cp {
			continue
		}
		e, failed := envelope.DecodeStoredJSON(q.Event)
		if failed != nil {
			failed = fmt.Errorf("the stored event does not decode: %w", failed)
		} else if r.p.Deliver != nil {
			failed = r.callDeliver(ctx, e)
			if ctx.Err() != nil {
				return ctx.Err()
			}
		}
		var cause error
		err := r.s.Update(ctx, func(tx *store.Tx) error {
			cause = failed
			if err := store.Bookkeeping(inside.Key{}, tx).CheckFence(ctx, lease); err != nil {
				return err
			}
			if cause == nil && r.p.Deliver == nil {
				cause = r.p.applyTx(ctx, tx, r.names, e)
			}
			if cause != nil {
				_, err := store.Bookkeeping(inside.Key{}, tx).RetryFailed(ctx, q.ID, cause.Error())
				return err
			}
			ok, err := store.Bookkeeping(inside.Key{}, tx).ResolveRetry(ctx, q.ID, "retried")
			if err == nil && !ok {
				err = errRetryGone
			}
			return err
		})
		switch {
		case errors.Is(err, errRetryGone):
			continue
		case err != nil:
			return err
		case cause != nil:
			r.log.Error("a retried event failed again; it stays quarantined", "position", q.Position, "id", q.EventID, "error", cause,
				"next", advice(r.p.Name, q.EventID, cause, false))
		default:
			r.log.Info("applied a retried event", "position", q.Position, "id", q.EventID)
		}
	}
	return nil
}

// ApplyRetries applies again the quarantined events an operator marked
// for retry (QuarantineBook.Retry, eventlite quarantine retry), each in
// its own transaction and in aggregate order: the next version is applied
// (then the deferred successors it unblocks), one still ahead of a gap is
// deferred again, one the aggregate already passed is resolved as stale.
// A failure leaves the entry quarantined with one more attempt. It
// returns how many entries it resolved. natsjs.RunJetStream calls it on every
// pass; a service that feeds Handle by other means calls it itself.
func (c *Consumer) ApplyRetries(ctx context.Context) (int, error) {
	qs, err := Quarantine(c.s).Retries(ctx, c.opts.Name)
	if err != nil {
		return 0, err
	}
	resolved := 0
	for _, q := range qs {
		e, derr := envelope.DecodeJSON(q.Event, -1)
		if derr != nil {
			derr = fmt.Errorf("the message does not decode as a CloudEvent: %w", derr)
		}
		var (
			resolution string
			cause      error
		)
		err := c.s.Update(ctx, func(tx *store.Tx) error {
			resolution, cause = "", derr
			if cause == nil {
				var err error
				resolution, cause, err = c.retryTx(ctx, tx, e)
				if err != nil {
					return err
				}
			}
			if cause != nil {
				_, err := store.Bookkeeping(inside.Key{}, tx).RetryFailed(ctx, q.ID, cause.Error())
				return err
			}
			ok, err := store.Bookkeeping(inside.Key{}, tx).ResolveRetry(ctx, q.ID, resolution)
			if err == nil && !ok {
				err = errRetryGone
			}
			return err
		})
		switch {
		case errors.Is(err, errRetryGone):
			continue
		case err != nil:
			return resolved, fmt.Errorf("consumer %s: retry event %s: %w", c.opts.Name, q.EventID, err)
		case cause != nil:
			c.log.Warn("a retried event failed again; it stays quarantined", "id", q.EventID, "error", cause,
				"next", advice(c.opts.Name, q.EventID, cause, false))
		default:
			resolved++
			c.log.Info("retried a quarantined event", "id", q.EventID, "outcome", resolution)
		}
	}
	return resolved, nil
}

// retryTx takes a quarantined event back through the consumer's ordering.
// cause is the apply's error (its writes are undone); err is a store
// failure that rolls everything back.
func (c *Consumer) retryTx(ctx context.Context, tx *store.Tx, e envelope.Event) (resolution string, cause, err error) {
	tenant := tenantOf(e)
	apply := func() (string, error, error) {
		cause, err := c.applyOnceTx(ctx, tx, e)
		if cause != nil || err != nil {
			return "", cause, err
		}
		if e.Stream != "" && e.StreamVersion > 0 {
			if _, err := c.drainTx(ctx, tx, tenant, e.Stream, e.StreamVersion); err != nil {
				return "", nil, err
			}
		}
		return "retried", nil, nil
	}
	if e.Stream == "" || e.StreamVersion == 0 {
		resolution, cause, err = apply()
	} else {
		cur, curID, seen, err := store.Bookkeeping(inside.Key{}, tx).ConsumerVersion(ctx, tenant, c.opts.Name, e.Stream)
		if err != nil {
			return "", nil, err
		}
		if !seen && c.opts.StartAtFirstSeen {
			cur = e.StreamVersion - 1
		}
		switch v := e.StreamVersion; {
		case v == cur+1:
			resolution, cause, err = apply()
		case v == cur && curID == e.ID:
			resolution = "applied" // it arrived again and applied meanwhile
		case v == cur:
			resolution, err = "conflict", c.conflictTx(ctx, tx, e, curID)
		case v < cur:
			resolution, err = "stale", store.Bookkeeping(inside.Key{}, tx).CountConsumer(ctx, c.opts.Name, 0, 0, 1)
		default:
			b, _ := e.MarshalJSON()
			existing, clash, derr := store.Bookkeeping(inside.Key{}, tx).Defer(ctx, inside.Deferred{
				Consumer: c.opts.Name, Tenant: tenant, Subject: e.Stream, Version: v, EventID: e.ID, Event: b,
				Expected: cur + 1, FirstSeen: c.opts.Now(), Reason: fmt.Sprintf("retried from quarantine; version gap: expected %d, got %d", cur+1, v),
			})
			switch {
			case derr != nil:
				err = derr
			case clash && existing.EventID != e.ID:
				resolution, err = "conflict", c.conflictTx(ctx, tx, e, existing.EventID)
			default:
				resolution = "deferred"
			}
		}
		if err != nil {
			return "", nil, err
		}
	}
	if err != nil || cause != nil {
		return "", cause, err
	}
	// Record the message as processed, so a copy that comes later is a
	// duplicate (an event quarantined before Handle committed is not in
	// the inbox yet).
	if _, err := store.Bookkeeping(inside.Key{}, tx).InboxInsert(ctx, inside.InboxMessage{Tenant: tenant, Consumer: c.opts.Name, Source: e.Source, MessageID: e.ID}); err != nil {
		return "", nil, err
	}
	return resolution, nil, nil
}
