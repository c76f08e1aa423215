package store

import (
	"context"
	"fmt"
	"time"
)

// QuarantineReason says why an event was set aside.
type QuarantineReason string

// Quarantine reasons.
const (
	ReasonHandlerError     QuarantineReason = "handler_error"     // a handler kept failing on the event
	ReasonUninterpretable  QuarantineReason = "uninterpretable"   // unknown type or schema version, or data that does not decode
	ReasonDeferredTooLong  QuarantineReason = "deferred_too_long" // a version gap did not fill in time
	ReasonUndecodable      QuarantineReason = "undecodable"       // the message is not a CloudEvent
	ReasonTooManyDelivered QuarantineReason = "too_many_deliveries"
)

// Quarantined is an event set aside for a person, with the evidence.
type Quarantined struct {
	ID         int64
	Consumer   string // the projection or consumer name
	Reason     QuarantineReason
	Tenant     string
	Subject    string
	Version    int64
	Position   int64 // for local projections
	EventID    string
	Event      []byte // the event as structured JSON, when it decoded
	Error      string
	Attempts   int
	Evidence   string // JSON object
	CreatedAt  time.Time
	ResolvedAt time.Time // zero while open
	// LastFailedAt is when the event last failed (CreatedAt at first).
	LastFailedAt time.Time
	// RetryRequestedAt is set while a retry is asked for and not yet made.
	RetryRequestedAt time.Time
	// Resolution says how a resolved entry ended: applied (a restarted
	// runner applied it), retried (a requested retry applied it),
	// skipped, or, for consumers, stale or deferred.
	Resolution string
	// Kind is "projection" when Consumer names a projection the store
	// knows, "consumer" otherwise (filled by QuarantinedEvents).
	Kind string
	// Type is the event's type when its JSON says (filled by
	// QuarantinedEvents).
	Type string
}

// Quarantine records q inside an Update closure. An open entry for the
// same consumer, tenant, event id and position is updated (attempts and
// error) rather than repeated.
func (tx *Tx) Quarantine(ctx context.Context, q Quarantined) error {
	if err := tx.check(); err != nil {
		return err
	}
	s := tx.s
	if q.Evidence == "" {
		q.Evidence = "{}"
	}
	_, err := s.wconn.ExecContext(ctx, `INSERT INTO quarantine (consumer, reason, tenant, subject, version, position, event_id, event, error, attempts, evidence, created_at, last_failed_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (consumer, tenant, event_id, position) WHERE resolved_at IS NULL
		DO UPDATE SET reason = excluded.reason, error = excluded.error, attempts = quarantine.attempts + excluded.attempts, evidence = excluded.evidence,
			last_failed_at = excluded.last_failed_at, retry_requested_at = NULL`,
		q.Consumer, q.Reason, q.Tenant, q.Subject, q.Version, q.Position, q.EventID, q.Event, q.Error, q.Attempts, q.Evidence, tx.now, tx.now)
	if err != nil {
		return fmt.Errorf("quarantine %s event %q: %w", q.Consumer, q.EventID, mapErr(err))
	}
	return nil
}

// ResolveQuarantine marks the open entries of consumer at position (or,
// with position 0, for the event id) resolved.
func (tx *Tx) ResolveQuarantine(ctx context.Context, consumer string, position int64, eventID string) error {
	if err := tx.check(); err != nil {
		return err
	}
	s := tx.s
	_, err := s.wconn.ExecContext(ctx, `UPDATE quarantine SET resolved_at = ?, resolution = 'applied', retry_requested_at = NULL WHERE consumer = ? AND resolved_at IS NULL
		AND ((? > 0 AND position = ?) OR (? = 0 AND event_id = ?))`, tx.now, consumer, position, position, position, eventID)
	return mapErr(err)
}

// QuarantineFilter selects quarantine entries.
type QuarantineFilter struct {
	Consumer string // "" for every consumer
	Open     bool   // only unresolved entries
}

// QuarantinedEvents lists quarantine entries, oldest first.
func (p *Projections) QuarantinedEvents(ctx context.Context, f QuarantineFilter) ([]Quarantined, error) {
	s := p.s
	q := quarantineColumns + ` WHERE (? = '' OR consumer = ?)`
	if f.Open {
		q += ` AND resolved_at IS NULL`
	}
	return s.scanQuarantine(s.rdb.QueryContext(ctx, q+` ORDER BY id`, f.Consumer, f.Consumer))
}
