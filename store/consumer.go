package store

import (
	"context"
	"fmt"
	"time"

	"github.com/eventlite/eventlite/internal/inside"
	"github.com/eventlite/eventlite/store/internal/driver"
)

// The external-consumer ledger: the inbox (dedupe), the last applied
// version per aggregate, deferred events, version conflicts and counters.
// Its writes take the consumer's Update transaction (Bookkeeping), so the
// consumer's decision and its read-model writes commit together; its
// reads (deferred events, conflicts, counters) are the store's own
// (doctor) and package projection's (projection.Consumers, through
// Inner: inner_consumers.go). The rows are internal/inside's types;
// projection shows an application its own with the same fields.

// InboxInsert records a message as processed by its consumer. It returns
// false when the message was already there: a duplicate. The insert itself
// is the decision (ON CONFLICT DO NOTHING), never a check-then-insert.
func (tx txBook) InboxInsert(ctx context.Context, p inside.InboxMessage) (bool, error) {
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

// SetConsumerVersion records that a consumer applied a version of an
// aggregate.
func (tx txBook) SetConsumerVersion(ctx context.Context, p inside.ConsumerVersion) error {
	if err := tx.check(); err != nil {
		return err
	}
	s := tx.s
	k := driver.AggregateKey{Tenant: p.Tenant, Consumer: p.Consumer, Subject: p.Subject}
	return mapErr(s.ex.SetConsumerVersion(ctx, s.wconn, k, p.Version, p.EventID, tx.now))
}

// Defer stores d durably. When another event already waits at that
// version, nothing is stored and the waiting one is returned with ok
// true: the caller records a conflict.
func (tx txBook) Defer(ctx context.Context, d inside.Deferred) (existing inside.Deferred, ok bool, err error) {
	if err := tx.check(); err != nil {
		return inside.Deferred{}, false, err
	}
	s := tx.s
	row, clash, err := s.ex.Defer(ctx, s.wconn, deferredRow(d))
	if err != nil || !clash {
		return inside.Deferred{}, false, mapErr(err)
	}
	return deferredEvent(row), true, nil
}

// deferredRow is d as the driver stores it.
func deferredRow(d inside.Deferred) driver.DeferredRow {
	return driver.DeferredRow{AggregateKey: driver.AggregateKey{Tenant: d.Tenant, Consumer: d.Consumer, Subject: d.Subject},
		Version: d.Version, EventID: d.EventID, Event: d.Event, Expected: d.Expected, FirstSeen: d.FirstSeen.UnixNano(), Reason: d.Reason}
}

// deferredEvent is a stored row as callers see it.
func deferredEvent(r driver.DeferredRow) inside.Deferred {
	return inside.Deferred{Tenant: r.Tenant, Consumer: r.Consumer, Subject: r.Subject, Version: r.Version, EventID: r.EventID,
		Event: r.Event, Expected: r.Expected, FirstSeen: time.Unix(0, r.FirstSeen).UTC(), Reason: r.Reason}
}

// TakeDeferred removes and returns the event deferred at version, if
// any: the caller applies it in the same transaction.
func (tx txBook) TakeDeferred(ctx context.Context, tenant, consumer, subject string, version int64) (inside.Deferred, bool, error) {
	if err := tx.check(); err != nil {
		return inside.Deferred{}, false, err
	}
	s := tx.s
	row, ok, err := s.ex.TakeDeferred(ctx, s.wconn, driver.AggregateKey{Tenant: tenant, Consumer: consumer, Subject: subject}, version)
	if err != nil || !ok {
		return inside.Deferred{}, false, mapErr(err)
	}
	return deferredEvent(row), true, nil
}

// DropStaleDeferred removes the events deferred for an aggregate at or
// below version (they can never apply now) and returns them.
func (tx txBook) DropStaleDeferred(ctx context.Context, tenant, consumer, subject string, version int64) ([]inside.Deferred, error) {
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

func deferredEvents(rows []driver.DeferredRow) []inside.Deferred {
	var out []inside.Deferred
	for _, r := range rows {
		out = append(out, deferredEvent(r))
	}
	return out
}

// deferred lists events deferred by consumer ("" for all) that were
// first seen before the given time (zero: all), oldest first.
func (s *Store) deferred(ctx context.Context, consumer string, seenBefore time.Time) ([]inside.Deferred, error) {
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

// RecordConflict records a version conflict; the read model is not
// touched.
func (tx txBook) RecordConflict(ctx context.Context, c inside.Conflict) error {
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

// conflicts lists the unresolved version conflicts of consumer ("" for all).
func (s *Store) conflicts(ctx context.Context, consumer string) ([]inside.Conflict, error) {
	rows, err := s.ex.ListConflicts(ctx, s.rdb, consumer)
	if err != nil {
		return nil, mapErr(err)
	}
	var out []inside.Conflict
	for _, r := range rows {
		out = append(out, inside.Conflict{ID: r.ID, Tenant: r.Tenant, Consumer: r.Consumer, Subject: r.Subject, Version: r.Version,
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

// consumerStats reads consumer's counters and queues.
func (s *Store) consumerStats(ctx context.Context, consumer string) (inside.ConsumerStats, error) {
	r, err := s.ex.ConsumerStats(ctx, s.rdb, consumer)
	st := inside.ConsumerStats{Consumer: consumer, Applied: r.Applied, Duplicates: r.Duplicates, Stale: r.Stale,
		Deferred: r.Deferred, Conflicts: r.Conflicts, Quarantined: r.Quarantined}
	if err != nil {
		return st, mapErr(err)
	}
	if r.Deferred > 0 {
		st.OldestDeferred = time.Unix(0, r.OldestDeferred).UTC()
	}
	return st, nil
}
