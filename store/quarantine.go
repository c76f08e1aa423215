package store

import (
	"context"
	"fmt"
	"time"

	"github.com/eventlite/eventlite/store/internal/driver"
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
func (tx txBook) Quarantine(ctx context.Context, q Quarantined) error {
	if err := tx.check(); err != nil {
		return err
	}
	s := tx.s
	if q.Evidence == "" {
		q.Evidence = "{}"
	}
	err := s.ex.Quarantine(ctx, s.wconn, driver.QuarantineRow{Consumer: q.Consumer, Reason: string(q.Reason), Tenant: q.Tenant, Subject: q.Subject,
		Version: q.Version, Position: q.Position, EventID: q.EventID, Event: q.Event, Error: q.Error, Attempts: q.Attempts, Evidence: q.Evidence}, tx.now)
	if err != nil {
		return fmt.Errorf("quarantine %s event %q: %w", q.Consumer, q.EventID, mapErr(err))
	}
	return nil
}

// ResolveQuarantine marks the open entries of consumer at position (or,
// with position 0, for the event id) resolved.
func (tx txBook) ResolveQuarantine(ctx context.Context, consumer string, position int64, eventID string) error {
	if err := tx.check(); err != nil {
		return err
	}
	s := tx.s
	return mapErr(s.ex.ResolveQuarantine(ctx, s.wconn, consumer, position, eventID, tx.now))
}

// QuarantineFilter selects quarantine entries.
type QuarantineFilter struct {
	Consumer string // "" for every consumer
	Open     bool   // only unresolved entries
}

// QuarantinedEvents lists quarantine entries, oldest first.
func (p *Projections) QuarantinedEvents(ctx context.Context, f QuarantineFilter) ([]Quarantined, error) {
	s := p.s
	return quarantined(s.ex.QuarantineEntries(ctx, s.rdb, f.Consumer, f.Open))
}
