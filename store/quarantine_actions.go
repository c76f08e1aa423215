package store

import (
	"context"
	"encoding/json"
	"time"

	"github.com/eventlite/eventlite/internal/projrow"
	"github.com/eventlite/eventlite/store/internal/driver"
)

// Operators act on quarantine entries by the projection's or consumer's
// name and the event id: list the open ones, ask for a retry (the runner
// or consumer applies the event again on its next pass: only the service
// can run its handlers), or skip (give the event up and move on).

// quarantined turns stored entries into what callers see: times, the kind
// of name, and the event's type read from its JSON.
func quarantined(rows []driver.QuarantineRow, err error) ([]projrow.Quarantined, error) {
	if err != nil {
		return nil, mapErr(err)
	}
	var out []projrow.Quarantined
	for _, r := range rows {
		e := projrow.Quarantined{ID: r.ID, Consumer: r.Consumer, Reason: r.Reason, Tenant: r.Tenant, Subject: r.Subject,
			Version: r.Version, Position: r.Position, EventID: r.EventID, Event: r.Event, Error: r.Error, Attempts: r.Attempts,
			Evidence: r.Evidence, Resolution: r.Resolution}
		e.CreatedAt, e.LastFailedAt = time.Unix(0, r.CreatedAt).UTC(), time.Unix(0, r.LastFailedAt).UTC()
		if r.ResolvedAt != 0 {
			e.ResolvedAt = time.Unix(0, r.ResolvedAt).UTC()
		}
		if r.RetryRequestedAt != 0 {
			e.RetryRequestedAt = time.Unix(0, r.RetryRequestedAt).UTC()
		}
		e.Kind = "consumer"
		if r.Projection {
			e.Kind = "projection"
		}
		var head struct {
			Type string `json:"type"`
		}
		if json.Unmarshal(e.Event, &head) == nil {
			e.Type = head.Type
		}
		out = append(out, e)
	}
	return out, nil
}

// openQuarantine lists the open quarantine entries of the projection or
// consumer name ("" for every one), oldest first. A name the store has no
// record of returns a *projrow.NotFound.
func (s *Store) openQuarantine(ctx context.Context, name string) ([]projrow.Quarantined, error) {
	if name != "" {
		ok, err := s.ex.QuarantineNameKnown(ctx, s.rdb, name)
		if err != nil {
			return nil, mapErr(err)
		}
		if !ok {
			return nil, &projrow.NotFound{Name: name}
		}
	}
	return s.quarantinedEvents(ctx, name, true)
}

// openEntriesTx reads the open entries of name for eventID in the write
// transaction; none is a *projrow.NotFound.
func (s *Store) openEntriesTx(ctx context.Context, name, eventID string) ([]projrow.Quarantined, error) {
	qs, err := quarantined(s.ex.OpenQuarantineEntries(ctx, s.wconn, name, eventID))
	if err != nil || len(qs) > 0 {
		return qs, err
	}
	ok, err := s.ex.QuarantineNameKnown(ctx, s.wconn, name)
	if err != nil {
		return nil, mapErr(err)
	}
	if !ok {
		return nil, &projrow.NotFound{Name: name}
	}
	return nil, &projrow.NotFound{Name: name, EventID: eventID}
}

// retryQuarantined marks the open entries of name for eventID for a
// retry: the projection's runner (or the consumer) applies the event again
// on its next pass and resolves the entry when it applies; a failure
// records one more attempt and clears the mark. A projection stopped on
// the event applies it when its runner next starts. It returns the
// entries marked.
func (s *Store) retryQuarantined(ctx context.Context, name, eventID string) ([]projrow.Quarantined, error) {
	var out []projrow.Quarantined
	err := s.Update(ctx, func(tx *Tx) error {
		qs, err := s.openEntriesTx(ctx, name, eventID)
		if err != nil {
			return err
		}
		if err := s.ex.MarkQuarantineRetry(ctx, s.wconn, name, eventID, tx.now); err != nil {
			return mapErr(err)
		}
		for i := range qs {
			qs[i].RetryRequestedAt = time.Unix(0, tx.now).UTC()
		}
		out = qs
		return nil
	})
	if err != nil {
		return nil, err // package projection says which event and name
	}
	s.log.Info("quarantined event marked for retry", "name", name, "event", eventID)
	return out, nil
}

// skipQuarantined gives the event up: its open entries of name are
// resolved as skipped. A projection stopped on the event moves its
// checkpoint past it and is active again, so its runner goes on with the
// next event. It returns the entries skipped.
func (s *Store) skipQuarantined(ctx context.Context, name, eventID string) ([]projrow.Quarantined, error) {
	var out []projrow.Quarantined
	err := s.Update(ctx, func(tx *Tx) error {
		qs, err := s.openEntriesTx(ctx, name, eventID)
		if err != nil {
			return err
		}
		if err := s.ex.SkipQuarantine(ctx, s.wconn, name, eventID, tx.now); err != nil {
			return mapErr(err)
		}
		b := txBook{tx}
		for _, q := range qs {
			if q.Position <= 0 || q.Kind != "projection" {
				continue
			}
			cp, err := b.Checkpoint(ctx, name)
			if err != nil {
				return err
			}
			if cp != q.Position-1 {
				continue // a runner in Skip mode passed it already
			}
			// The projection halted just before the event: move past it.
			// A runner retrying it meanwhile finds its checkpoint moved
			// and discards its batch.
			if err := b.SetCheckpoint(ctx, name, q.Position, nil); err != nil {
				return err
			}
			status, err := s.ex.QuarantinedProjectionStatus(ctx, s.wconn, name)
			if err != nil {
				return mapErr(err)
			}
			if status == projectionStopped {
				if err := b.SetProjectionStatus(ctx, name, projectionActive, ""); err != nil {
					return err
				}
			}
		}
		for i := range qs {
			qs[i].ResolvedAt, qs[i].Resolution = time.Unix(0, tx.now).UTC(), "skipped"
		}
		out = qs
		return nil
	})
	if err != nil {
		return nil, err
	}
	s.log.Warn("quarantined event skipped by an operator", "name", name, "event", eventID)
	return out, nil
}

// quarantineRetries lists the open entries of name marked for retry,
// in position then entry order.
func (s *Store) quarantineRetries(ctx context.Context, name string) ([]projrow.Quarantined, error) {
	return quarantined(s.ex.QuarantineRetries(ctx, s.rdb, name))
}

// ResolveRetry resolves the entry id with resolution ("retried", say)
// when it is still open and marked for retry; false when it is not (an
// operator skipped it, or another pass took it).
func (tx txBook) ResolveRetry(ctx context.Context, id int64, resolution string) (bool, error) {
	if err := tx.check(); err != nil {
		return false, err
	}
	s := tx.s
	ok, err := s.ex.ResolveRetry(ctx, s.wconn, id, resolution, tx.now)
	return ok, mapErr(err)
}

// RetryFailed records that a requested retry of entry id failed again
// with cause: one more attempt, the new error and failure time, and the
// retry mark cleared (the entry stays open). False when the entry is no
// longer open and marked.
func (tx txBook) RetryFailed(ctx context.Context, id int64, cause string) (bool, error) {
	if err := tx.check(); err != nil {
		return false, err
	}
	s := tx.s
	ok, err := s.ex.RetryFailed(ctx, s.wconn, id, cause, tx.now)
	return ok, mapErr(err)
}
