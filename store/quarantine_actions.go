package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Operators act on quarantine entries by the projection's or consumer's
// name and the event id: list the open ones, ask for a retry (the runner
// or consumer applies the event again on its next pass: only the service
// can run its handlers), or skip (give the event up and move on).

// QuarantineNotFoundError: no projection or consumer of that name has a
// record in the store, or it has no open entry for the event id.
// errors.Is(err, ErrNotFound) holds.
type QuarantineNotFoundError struct {
	Name    string
	EventID string // "" when the name itself is unknown
}

func (e *QuarantineNotFoundError) Error() string {
	if e.EventID == "" {
		return fmt.Sprintf("no projection or consumer named %q in this store", e.Name)
	}
	return fmt.Sprintf("%s has no open quarantine entry for event %q", e.Name, e.EventID)
}

// Unwrap lets errors.Is(err, ErrNotFound) match.
func (e *QuarantineNotFoundError) Unwrap() error { return ErrNotFound }

const quarantineColumns = `SELECT id, consumer, reason, tenant, subject, version, position, event_id, event, error, attempts, evidence,
	created_at, COALESCE(resolved_at, 0), COALESCE(last_failed_at, created_at), COALESCE(retry_requested_at, 0), resolution,
	EXISTS (SELECT 1 FROM projections p WHERE p.name = quarantine.consumer)
	FROM quarantine`

func (s *Store) scanQuarantine(rows *sql.Rows, err error) ([]Quarantined, error) {
	if err != nil {
		return nil, mapErr(err)
	}
	defer rows.Close()
	var out []Quarantined
	for rows.Next() {
		var e Quarantined
		var created, resolved, failed, retry int64
		var projection bool
		if err := rows.Scan(&e.ID, &e.Consumer, &e.Reason, &e.Tenant, &e.Subject, &e.Version, &e.Position, &e.EventID, &e.Event,
			&e.Error, &e.Attempts, &e.Evidence, &created, &resolved, &failed, &retry, &e.Resolution, &projection); err != nil {
			return nil, err
		}
		e.CreatedAt, e.LastFailedAt = time.Unix(0, created).UTC(), time.Unix(0, failed).UTC()
		if resolved != 0 {
			e.ResolvedAt = time.Unix(0, resolved).UTC()
		}
		if retry != 0 {
			e.RetryRequestedAt = time.Unix(0, retry).UTC()
		}
		e.Kind = "consumer"
		if projection {
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
	return out, mapErr(rows.Err())
}

// rowQuerier is a pool or the writer's connection.
type rowQuerier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// quarantineNameKnown reports whether name is a projection or consumer
// the store has a record of.
func quarantineNameKnown(ctx context.Context, q rowQuerier, name string) (bool, error) {
	var ok bool
	err := q.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM projections WHERE name = ?1)
		OR EXISTS (SELECT 1 FROM quarantine WHERE consumer = ?1)
		OR EXISTS (SELECT 1 FROM consumer_stats WHERE consumer = ?1)
		OR EXISTS (SELECT 1 FROM checkpoints WHERE name = ?1)`, name).Scan(&ok)
	return ok, mapErr(err)
}

// Projections.OpenQuarantine lists the open quarantine entries of the projection or
// consumer name ("" for every one), oldest first. A name the store has no
// record of returns a *QuarantineNotFoundError.
func (p *Projections) OpenQuarantine(ctx context.Context, name string) ([]Quarantined, error) {
	s := p.s
	if name != "" {
		ok, err := quarantineNameKnown(ctx, s.rdb, name)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, &QuarantineNotFoundError{Name: name}
		}
	}
	return s.Projections().QuarantinedEvents(ctx, QuarantineFilter{Consumer: name, Open: true})
}

// openEntriesTx reads the open entries of name for eventID in the write
// transaction; none is a *QuarantineNotFoundError.
func (s *Store) openEntriesTx(ctx context.Context, name, eventID string) ([]Quarantined, error) {
	qs, err := s.scanQuarantine(s.wconn.QueryContext(ctx, quarantineColumns+` WHERE consumer = ? AND event_id = ? AND resolved_at IS NULL ORDER BY id`, name, eventID))
	if err != nil || len(qs) > 0 {
		return qs, err
	}
	ok, err := quarantineNameKnown(ctx, s.wconn, name)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, &QuarantineNotFoundError{Name: name}
	}
	return nil, &QuarantineNotFoundError{Name: name, EventID: eventID}
}

// Projections.RetryQuarantined marks the open entries of name for eventID for a
// retry: the projection's runner (or the consumer) applies the event again
// on its next pass and resolves the entry when it applies; a failure
// records one more attempt and clears the mark. A projection stopped on
// the event applies it when its runner next starts. It returns the
// entries marked.
func (p *Projections) RetryQuarantined(ctx context.Context, name, eventID string) ([]Quarantined, error) {
	s := p.s
	var out []Quarantined
	err := s.Update(ctx, func(tx *Tx) error {
		qs, err := s.openEntriesTx(ctx, name, eventID)
		if err != nil {
			return err
		}
		if _, err := s.wconn.ExecContext(ctx, `UPDATE quarantine SET retry_requested_at = ? WHERE consumer = ? AND event_id = ? AND resolved_at IS NULL`,
			tx.now, name, eventID); err != nil {
			return mapErr(err)
		}
		for i := range qs {
			qs[i].RetryRequestedAt = time.Unix(0, tx.now).UTC()
		}
		out = qs
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("retry quarantined event %q of %s: %w", eventID, name, err)
	}
	s.log.Info("quarantined event marked for retry", "name", name, "event", eventID)
	return out, nil
}

// Projections.SkipQuarantined gives the event up: its open entries of name are
// resolved as skipped. A projection stopped on the event moves its
// checkpoint past it and is active again, so its runner goes on with the
// next event. It returns the entries skipped.
func (p *Projections) SkipQuarantined(ctx context.Context, name, eventID string) ([]Quarantined, error) {
	s := p.s
	var out []Quarantined
	err := s.Update(ctx, func(tx *Tx) error {
		qs, err := s.openEntriesTx(ctx, name, eventID)
		if err != nil {
			return err
		}
		if _, err := s.wconn.ExecContext(ctx, `UPDATE quarantine SET resolved_at = ?, resolution = 'skipped', retry_requested_at = NULL
			WHERE consumer = ? AND event_id = ? AND resolved_at IS NULL`, tx.now, name, eventID); err != nil {
			return mapErr(err)
		}
		for _, q := range qs {
			if q.Position <= 0 || q.Kind != "projection" {
				continue
			}
			cp, err := tx.Checkpoint(ctx, name)
			if err != nil {
				return err
			}
			if cp != q.Position-1 {
				continue // a runner in Skip mode passed it already
			}
			// The projection halted just before the event: move past it.
			// A runner retrying it meanwhile finds its checkpoint moved
			// and discards its batch.
			if err := tx.SetCheckpoint(ctx, name, q.Position, nil); err != nil {
				return err
			}
			var status ProjectionStatus
			err = s.wconn.QueryRowContext(ctx, `SELECT status FROM projections WHERE name = ?`, name).Scan(&status)
			if err != nil && !errors.Is(err, sql.ErrNoRows) {
				return mapErr(err)
			}
			if status == ProjectionStopped {
				if err := tx.SetProjectionStatus(ctx, name, ProjectionActive, ""); err != nil {
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
		return nil, fmt.Errorf("skip quarantined event %q of %s: %w", eventID, name, err)
	}
	s.log.Warn("quarantined event skipped by an operator", "name", name, "event", eventID)
	return out, nil
}

// Projections.QuarantineRetries lists the open entries of name marked for retry,
// in position then entry order.
func (p *Projections) QuarantineRetries(ctx context.Context, name string) ([]Quarantined, error) {
	s := p.s
	return s.scanQuarantine(s.rdb.QueryContext(ctx, quarantineColumns+` WHERE consumer = ? AND resolved_at IS NULL AND retry_requested_at IS NOT NULL
		ORDER BY position, id`, name))
}

// ResolveRetry resolves the entry id with resolution ("retried", say)
// when it is still open and marked for retry; false when it is not (an
// operator skipped it, or another pass took it).
func (tx *Tx) ResolveRetry(ctx context.Context, id int64, resolution string) (bool, error) {
	if err := tx.check(); err != nil {
		return false, err
	}
	s := tx.s
	res, err := s.wconn.ExecContext(ctx, `UPDATE quarantine SET resolved_at = ?, resolution = ?, retry_requested_at = NULL
		WHERE id = ? AND resolved_at IS NULL AND retry_requested_at IS NOT NULL`, tx.now, resolution, id)
	if err != nil {
		return false, mapErr(err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// RetryFailed records that a requested retry of entry id failed again
// with cause: one more attempt, the new error and failure time, and the
// retry mark cleared (the entry stays open). False when the entry is no
// longer open and marked.
func (tx *Tx) RetryFailed(ctx context.Context, id int64, cause string) (bool, error) {
	if err := tx.check(); err != nil {
		return false, err
	}
	s := tx.s
	res, err := s.wconn.ExecContext(ctx, `UPDATE quarantine SET attempts = attempts + 1, error = ?, last_failed_at = ?, retry_requested_at = NULL
		WHERE id = ? AND resolved_at IS NULL AND retry_requested_at IS NOT NULL`, cause, tx.now, id)
	if err != nil {
		return false, mapErr(err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}
