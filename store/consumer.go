package store

import (
	"context"
	"fmt"
	"time"

	"github.com/eventlite/eventlite/store/internal/driver"
)

// Consumers is the external-consumer ledger, reached with Store.Consumers:
// its reads (deferred events, version conflicts, counters). The inbox,
// version and deferral writes run in the consumer's Update transaction
// (Bookkeeping: InboxInsert, SetConsumerVersion, Defer...).
type Consumers struct{ s *Store }

// Consumers returns the store's external-consumer ledger.
func (s *Store) Consumers() *Consumers { return &Consumers{s: s} }

// The external-consumer ledger: the inbox (dedupe), the last applied
// version per aggregate, deferred events, version conflicts and counters.
// Every method takes the consumer's Update transaction, so the consumer's
// decision and its read-model writes commit together.

// InboxInsertParams names a message in a consumer's inbox.
type InboxInsertParams struct {
	Tenant    string
	Consumer  string
	Source    string // the message's source (a CloudEvent's source)
	MessageID string // its id, unique per source
}

// InboxInsert records a message as processed by its consumer. It returns
// false when the message was already there: a duplicate. The insert itself
// is the decision (ON CONFLICT DO NOTHING), never a check-then-insert.
func (tx txBook) InboxInsert(ctx context.Context, p InboxInsertParams) (bool, error) {
	if err := tx.check(); err != nil {
		return false, err
	}
	s := tx.s
	fresh, err := s.ex.InboxInsert(ctx, s.wconn, driver.InboxMessage{Tenant: p.Tenant, Consumer: p.Consumer, Source: p.Source, MessageID: p.MessageID}, tx.now)
	return fresh, mapErr(err)
}

// ConsumerVersion returns the last version of an aggregate that consumer
// applied, with that event's id; ok is false when it never saw one.
func (tx txBook) ConsumerVersion(ctx context.Context, tenant, consumer, subject string) (version int64, eventID string, ok bool, err error) {
	if err := tx.check(); err != nil {
		return 0, "", false, err
	}
	s := tx.s
	version, eventID, ok, err = s.ex.ConsumerVersion(ctx, s.wconn, driver.AggregateKey{Tenant: tenant, Consumer: consumer, Subject: subject})
	return version, eventID, ok, mapErr(err)
}

// SetConsumerVersionParams names the version of an aggregate a consumer
// applied.
type SetConsumerVersionParams struct {
	Tenant   string
	Consumer string
	Subject  string // the aggregate (the event's stream)
	Version  int64
	EventID  string // the applied event's id
}

// SetConsumerVersion records that a consumer applied a version of an
// aggregate.
func (tx txBook) SetConsumerVersion(ctx context.Context, p SetConsumerVersionParams) error {
	if err := tx.check(); err != nil {
		return err
	}
	s := tx.s
	k := driver.AggregateKey{Tenant: p.Tenant, Consumer: p.Consumer, Subject: p.Subject}
	return mapErr(s.ex.SetConsumerVersion(ctx, s.wconn, k, p.Version, p.EventID, tx.now))
}

// DeferredEvent is an event that arrived ahead of a version gap.
type DeferredEvent struct {
	Tenant    string
	Consumer  string
	Subject   string
	Version   int64
	EventID   string
	Event     []byte // structured JSON
	Expected  int64  // the version the consumer waited for when it arrived
	FirstSeen time.Time
	Reason    string
}

// Defer stores d durably. When another event already waits at that
// version, nothing is stored and the waiting one is returned with ok
// true: the caller records a conflict.
func (tx txBook) Defer(ctx context.Context, d DeferredEvent) (existing DeferredEvent, ok bool, err error) {
	if err := tx.check(); err != nil {
		return DeferredEvent{}, false, err
	}
	s := tx.s
	row, clash, err := s.ex.Defer(ctx, s.wconn, deferredRow(d))
	if err != nil || !clash {
		return DeferredEvent{}, false, mapErr(err)
	}
	return deferredEvent(row), true, nil
}

// deferredRow is d as the driver stores it.
func deferredRow(d DeferredEvent) driver.DeferredRow {
	return driver.DeferredRow{AggregateKey: driver.AggregateKey{Tenant: d.Tenant, Consumer: d.Consumer, Subject: d.Subject},
		Version: d.Version, EventID: d.EventID, Event: d.Event, Expected: d.Expected, FirstSeen: d.FirstSeen.UnixNano(), Reason: d.Reason}
}

// deferredEvent is a stored row as callers see it.
func deferredEvent(r driver.DeferredRow) DeferredEvent {
	return DeferredEvent{Tenant: r.Tenant, Consumer: r.Consumer, Subject: r.Subject, Version: r.Version, EventID: r.EventID,
		Event: r.Event, Expected: r.Expected, FirstSeen: time.Unix(0, r.FirstSeen).UTC(), Reason: r.Reason}
}

// TakeDeferred removes and returns the event deferred at version, if
// any: the caller applies it in the same transaction.
func (tx txBook) TakeDeferred(ctx context.Context, tenant, consumer, subject string, version int64) (DeferredEvent, bool, error) {
	if err := tx.check(); err != nil {
		return DeferredEvent{}, false, err
	}
	s := tx.s
	row, ok, err := s.ex.TakeDeferred(ctx, s.wconn, driver.AggregateKey{Tenant: tenant, Consumer: consumer, Subject: subject}, version)
	if err != nil || !ok {
		return DeferredEvent{}, false, mapErr(err)
	}
	return deferredEvent(row), true, nil
}

// DropStaleDeferred removes the events deferred for an aggregate at or
// below version (they can never apply now) and returns them.
func (tx txBook) DropStaleDeferred(ctx context.Context, tenant, consumer, subject string, version int64) ([]DeferredEvent, error) {
	if err := tx.check(); err != nil {
		return nil, err
	}
	s := tx.s
	rows, err := s.ex.DropStaleDeferred(ctx, s.wconn, driver.AggregateKey{Tenant: tenant, Consumer: consumer, Subject: subject}, version)
	if err != nil {
		return nil, mapErr(err)
	}
	return deferredEvents(rows), nil
}

func deferredEvents(rows []driver.DeferredRow) []DeferredEvent {
	var out []DeferredEvent
	for _, r := range rows {
		out = append(out, deferredEvent(r))
	}
	return out
}

// Deferred lists events deferred by consumer ("" for all) that were
// first seen before the given time (zero: all), oldest first.
func (c *Consumers) Deferred(ctx context.Context, consumer string, seenBefore time.Time) ([]DeferredEvent, error) {
	s := c.s
	before := int64(1<<63 - 1)
	if !seenBefore.IsZero() {
		before = seenBefore.UnixNano()
	}
	rows, err := s.ex.ListDeferred(ctx, s.rdb, consumer, before)
	if err != nil {
		return nil, mapErr(err)
	}
	return deferredEvents(rows), nil
}

// VersionConflict is two different events claiming one version of an aggregate.
type VersionConflict struct {
	ID               int64
	Tenant           string
	Consumer         string
	Subject          string
	Version          int64
	KeptEventID      string // the event the consumer applied (or deferred) first
	ConflictingID    string
	ConflictingEvent []byte // structured JSON: the evidence
	CreatedAt        time.Time
}

// RecordConflict records a version conflict; the read model is not
// touched.
func (tx txBook) RecordConflict(ctx context.Context, c VersionConflict) error {
	if err := tx.check(); err != nil {
		return err
	}
	s := tx.s
	err := s.ex.RecordConflict(ctx, s.wconn, driver.ConflictRow{AggregateKey: driver.AggregateKey{Tenant: c.Tenant, Consumer: c.Consumer, Subject: c.Subject},
		Version: c.Version, KeptEventID: c.KeptEventID, ConflictingID: c.ConflictingID, ConflictingEvent: c.ConflictingEvent}, tx.now)
	if err != nil {
		return fmt.Errorf("record version conflict: %w", mapErr(err))
	}
	return nil
}

// Conflicts lists the unresolved version conflicts of consumer ("" for all).
func (c *Consumers) Conflicts(ctx context.Context, consumer string) ([]VersionConflict, error) {
	s := c.s
	rows, err := s.ex.ListConflicts(ctx, s.rdb, consumer)
	if err != nil {
		return nil, mapErr(err)
	}
	var out []VersionConflict
	for _, r := range rows {
		out = append(out, VersionConflict{ID: r.ID, Tenant: r.Tenant, Consumer: r.Consumer, Subject: r.Subject, Version: r.Version,
			KeptEventID: r.KeptEventID, ConflictingID: r.ConflictingID, ConflictingEvent: r.ConflictingEvent, CreatedAt: time.Unix(0, r.CreatedAt).UTC()})
	}
	return out, nil
}

// CountConsumer adds to a consumer's counters.
func (tx txBook) CountConsumer(ctx context.Context, consumer string, applied, duplicates, stale int) error {
	if err := tx.check(); err != nil {
		return err
	}
	s := tx.s
	return mapErr(s.ex.CountConsumer(ctx, s.wconn, consumer, applied, duplicates, stale))
}

// ConsumerStats are an external consumer's counters and queues.
type ConsumerStats struct {
	Consumer       string
	Applied        int64
	Duplicates     int64
	Stale          int64
	Deferred       int64
	OldestDeferred time.Time // zero when nothing waits
	Conflicts      int64
	Quarantined    int64
}

// Stats reads consumer's counters and queues.
func (c *Consumers) Stats(ctx context.Context, consumer string) (ConsumerStats, error) {
	s := c.s
	r, err := s.ex.ConsumerStats(ctx, s.rdb, consumer)
	st := ConsumerStats{Consumer: consumer, Applied: r.Applied, Duplicates: r.Duplicates, Stale: r.Stale,
		Deferred: r.Deferred, Conflicts: r.Conflicts, Quarantined: r.Quarantined}
	if err != nil {
		return st, mapErr(err)
	}
	if r.Deferred > 0 {
		st.OldestDeferred = time.Unix(0, r.OldestDeferred).UTC()
	}
	return st, nil
}
