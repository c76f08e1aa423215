package projection

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/eventlite/eventlite/internal/inside"
	"github.com/eventlite/eventlite/internal/projrow"
	"github.com/eventlite/eventlite/store"
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

// QuarantineEntry is an event set aside for a person, with the evidence.
type QuarantineEntry struct {
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
	// knows, "consumer" otherwise (filled when read).
	Kind string
	// Type is the event's type when its JSON says (filled when read).
	Type string
}

// row is q as the store's bookkeeping records it.
func (q QuarantineEntry) row() projrow.Quarantined {
	return projrow.Quarantined{ID: q.ID, Consumer: q.Consumer, Reason: string(q.Reason), Tenant: q.Tenant, Subject: q.Subject,
		Version: q.Version, Position: q.Position, EventID: q.EventID, Event: q.Event, Error: q.Error, Attempts: q.Attempts,
		Evidence: q.Evidence, CreatedAt: q.CreatedAt, ResolvedAt: q.ResolvedAt, LastFailedAt: q.LastFailedAt,
		RetryRequestedAt: q.RetryRequestedAt, Resolution: q.Resolution, Kind: q.Kind, Type: q.Type}
}

func entriesOf(rows []projrow.Quarantined, err error) ([]QuarantineEntry, error) {
	if err != nil {
		return nil, quarantineErr(err)
	}
	var out []QuarantineEntry
	for _, r := range rows {
		out = append(out, QuarantineEntry{ID: r.ID, Consumer: r.Consumer, Reason: QuarantineReason(r.Reason), Tenant: r.Tenant,
			Subject: r.Subject, Version: r.Version, Position: r.Position, EventID: r.EventID, Event: r.Event, Error: r.Error,
			Attempts: r.Attempts, Evidence: r.Evidence, CreatedAt: r.CreatedAt, ResolvedAt: r.ResolvedAt, LastFailedAt: r.LastFailedAt,
			RetryRequestedAt: r.RetryRequestedAt, Resolution: r.Resolution, Kind: r.Kind, Type: r.Type})
	}
	return out, nil
}

// quarantine records q in tx (the store's bookkeeping).
func quarantine(ctx context.Context, tx *store.Tx, q QuarantineEntry) error {
	return store.Bookkeeping(inside.Key{}, tx).Quarantine(ctx, q.row())
}

// QuarantineNotFoundError: no projection or consumer of that name has a
// record in the store, or it has no open entry for the event id.
// errors.Is(err, store.ErrNotFound) holds.
type QuarantineNotFoundError struct {
	Name    string
	EventID string // "" when the name itself is unknown
}

func (e *QuarantineNotFoundError) Error() string {
	return (&projrow.NotFound{Name: e.Name, EventID: e.EventID}).Error()
}

// Unwrap lets errors.Is(err, store.ErrNotFound) match.
func (e *QuarantineNotFoundError) Unwrap() error { return store.ErrNotFound }

// quarantineErr turns the store's not-found answer into a
// *QuarantineNotFoundError.
func quarantineErr(err error) error {
	var nf *projrow.NotFound
	if errors.As(err, &nf) {
		return &QuarantineNotFoundError{Name: nf.Name, EventID: nf.EventID}
	}
	return err
}

// QuarantineFilter selects quarantine entries.
type QuarantineFilter struct {
	Consumer string // "" for every consumer
	Open     bool   // only unresolved entries
}

// QuarantineBook is a store's quarantine: the events its projections and
// consumers set aside, and an operator's actions on them by the
// projection's or consumer's name and the event id: list the open ones,
// ask for a retry (the runner or consumer applies the event again on its
// next pass: only the service can run its handlers), or skip (give the
// event up and move on). Quarantine returns it.
type QuarantineBook struct{ s *store.Store }

// Quarantine returns the quarantine of s.
func Quarantine(s *store.Store) *QuarantineBook { return &QuarantineBook{s: s} }

// Events lists quarantine entries, oldest first.
func (b *QuarantineBook) Events(ctx context.Context, f QuarantineFilter) ([]QuarantineEntry, error) {
	return entriesOf(store.Inner(inside.Key{}, b.s).QuarantinedEvents(ctx, f.Consumer, f.Open))
}

// Open lists the open quarantine entries of the projection or consumer
// name ("" for every one), oldest first. A name the store has no record
// of returns a *QuarantineNotFoundError.
func (b *QuarantineBook) Open(ctx context.Context, name string) ([]QuarantineEntry, error) {
	return entriesOf(store.Inner(inside.Key{}, b.s).OpenQuarantine(ctx, name))
}

// Retry marks the open entries of name for eventID for a retry: the
// projection's runner (or the consumer) applies the event again on its
// next pass and resolves the entry when it applies; a failure records one
// more attempt and clears the mark. A projection stopped on the event
// applies it when its runner next starts. It returns the entries marked;
// none is a *QuarantineNotFoundError.
func (b *QuarantineBook) Retry(ctx context.Context, name, eventID string) ([]QuarantineEntry, error) {
	qs, err := entriesOf(store.Inner(inside.Key{}, b.s).RetryQuarantined(ctx, name, eventID))
	if err != nil {
		return nil, fmt.Errorf("retry quarantined event %q of %s: %w", eventID, name, err)
	}
	return qs, nil
}

// Skip gives the event up: its open entries of name are resolved as
// skipped. A projection stopped on the event moves its checkpoint past it
// and is active again, so its runner goes on with the next event. It
// returns the entries skipped; none is a *QuarantineNotFoundError.
func (b *QuarantineBook) Skip(ctx context.Context, name, eventID string) ([]QuarantineEntry, error) {
	qs, err := entriesOf(store.Inner(inside.Key{}, b.s).SkipQuarantined(ctx, name, eventID))
	if err != nil {
		return nil, fmt.Errorf("skip quarantined event %q of %s: %w", eventID, name, err)
	}
	return qs, nil
}

// Retries lists the open entries of name marked for retry, in position
// then entry order.
func (b *QuarantineBook) Retries(ctx context.Context, name string) ([]QuarantineEntry, error) {
	return entriesOf(store.Inner(inside.Key{}, b.s).QuarantineRetries(ctx, name))
}
