package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Consumers is the external-consumer ledger, reached with Store.Consumers:
// its reads (deferred events, version conflicts, counters). The inbox,
// version and deferral writes run in the consumer's Update transaction
// (tx.InboxInsert, tx.SetConsumerVersion, tx.Defer...).
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
func (tx *Tx) InboxInsert(ctx context.Context, p InboxInsertParams) (bool, error) {
	if err := tx.check(); err != nil {
		return false, err
	}
	s := tx.s
	res, err := s.wconn.ExecContext(ctx, `INSERT INTO inbox (tenant, consumer, source, message_id, processed_at) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT DO NOTHING`, p.Tenant, p.Consumer, p.Source, p.MessageID, tx.now)
	if err != nil {
		return false, mapErr(err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// ConsumerVersion returns the last version of an aggregate that consumer
// applied, with that event's id; ok is false when it never saw one.
func (tx *Tx) ConsumerVersion(ctx context.Context, tenant, consumer, subject string) (version int64, eventID string, ok bool, err error) {
	if err := tx.check(); err != nil {
		return 0, "", false, err
	}
	s := tx.s
	err = s.wconn.QueryRowContext(ctx, `SELECT version, event_id FROM consumer_versions WHERE consumer = ? AND tenant = ? AND subject = ?`,
		consumer, tenant, subject).Scan(&version, &eventID)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, "", false, nil
	}
	return version, eventID, err == nil, mapErr(err)
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
func (tx *Tx) SetConsumerVersion(ctx context.Context, p SetConsumerVersionParams) error {
	if err := tx.check(); err != nil {
		return err
	}
	s := tx.s
	_, err := s.wconn.ExecContext(ctx, `INSERT INTO consumer_versions (consumer, tenant, subject, version, event_id, updated_at) VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (consumer, tenant, subject) DO UPDATE SET version = excluded.version, event_id = excluded.event_id, updated_at = excluded.updated_at`,
		p.Consumer, p.Tenant, p.Subject, p.Version, p.EventID, tx.now)
	return mapErr(err)
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
func (tx *Tx) Defer(ctx context.Context, d DeferredEvent) (existing DeferredEvent, ok bool, err error) {
	if err := tx.check(); err != nil {
		return DeferredEvent{}, false, err
	}
	s := tx.s
	res, err := s.wconn.ExecContext(ctx, `INSERT INTO deferred (consumer, tenant, subject, version, event_id, event, expected, first_seen, reason)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
		d.Consumer, d.Tenant, d.Subject, d.Version, d.EventID, d.Event, d.Expected, d.FirstSeen.UnixNano(), d.Reason)
	if err != nil {
		return DeferredEvent{}, false, mapErr(err)
	}
	if n, _ := res.RowsAffected(); n == 1 {
		return DeferredEvent{}, false, nil
	}
	existing, ok, err = s.deferredAt(ctx, d.Tenant, d.Consumer, d.Subject, d.Version)
	return existing, ok, err
}

func (s *Store) deferredAt(ctx context.Context, tenant, consumer, subject string, version int64) (DeferredEvent, bool, error) {
	d := DeferredEvent{Consumer: consumer, Tenant: tenant, Subject: subject, Version: version}
	var seen int64
	err := s.wconn.QueryRowContext(ctx, `SELECT event_id, event, expected, first_seen, reason FROM deferred
		WHERE consumer = ? AND tenant = ? AND subject = ? AND version = ?`, consumer, tenant, subject, version).
		Scan(&d.EventID, &d.Event, &d.Expected, &seen, &d.Reason)
	if errors.Is(err, sql.ErrNoRows) {
		return DeferredEvent{}, false, nil
	}
	if err != nil {
		return DeferredEvent{}, false, mapErr(err)
	}
	d.FirstSeen = time.Unix(0, seen).UTC()
	return d, true, nil
}

// TakeDeferred removes and returns the event deferred at version, if
// any: the caller applies it in the same transaction.
func (tx *Tx) TakeDeferred(ctx context.Context, tenant, consumer, subject string, version int64) (DeferredEvent, bool, error) {
	if err := tx.check(); err != nil {
		return DeferredEvent{}, false, err
	}
	s := tx.s
	d, ok, err := s.deferredAt(ctx, tenant, consumer, subject, version)
	if err != nil || !ok {
		return DeferredEvent{}, false, err
	}
	if _, err := s.wconn.ExecContext(ctx, `DELETE FROM deferred WHERE consumer = ? AND tenant = ? AND subject = ? AND version = ?`,
		consumer, tenant, subject, version); err != nil {
		return DeferredEvent{}, false, mapErr(err)
	}
	return d, true, nil
}

// DropStaleDeferred removes the events deferred for an aggregate at or
// below version (they can never apply now) and returns them.
func (tx *Tx) DropStaleDeferred(ctx context.Context, tenant, consumer, subject string, version int64) ([]DeferredEvent, error) {
	if err := tx.check(); err != nil {
		return nil, err
	}
	s := tx.s
	rows, err := s.wconn.QueryContext(ctx, `DELETE FROM deferred WHERE consumer = ? AND tenant = ? AND subject = ? AND version <= ?
		RETURNING version, event_id, event, expected, first_seen, reason`, consumer, tenant, subject, version)
	if err != nil {
		return nil, mapErr(err)
	}
	defer rows.Close()
	var out []DeferredEvent
	for rows.Next() {
		d := DeferredEvent{Consumer: consumer, Tenant: tenant, Subject: subject}
		var seen int64
		if err := rows.Scan(&d.Version, &d.EventID, &d.Event, &d.Expected, &seen, &d.Reason); err != nil {
			return nil, err
		}
		d.FirstSeen = time.Unix(0, seen).UTC()
		out = append(out, d)
	}
	return out, mapErr(rows.Err())
}

// Deferred lists events deferred by consumer ("" for all) that were
// first seen before the given time (zero: all), oldest first.
func (c *Consumers) Deferred(ctx context.Context, consumer string, seenBefore time.Time) ([]DeferredEvent, error) {
	s := c.s
	before := int64(1<<63 - 1)
	if !seenBefore.IsZero() {
		before = seenBefore.UnixNano()
	}
	rows, err := s.rdb.QueryContext(ctx, `SELECT consumer, tenant, subject, version, event_id, event, expected, first_seen, reason FROM deferred
		WHERE (? = '' OR consumer = ?) AND first_seen < ? ORDER BY first_seen`, consumer, consumer, before)
	if err != nil {
		return nil, mapErr(err)
	}
	defer rows.Close()
	var out []DeferredEvent
	for rows.Next() {
		var d DeferredEvent
		var seen int64
		if err := rows.Scan(&d.Consumer, &d.Tenant, &d.Subject, &d.Version, &d.EventID, &d.Event, &d.Expected, &seen, &d.Reason); err != nil {
			return nil, err
		}
		d.FirstSeen = time.Unix(0, seen).UTC()
		out = append(out, d)
	}
	return out, mapErr(rows.Err())
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
func (tx *Tx) RecordConflict(ctx context.Context, c VersionConflict) error {
	if err := tx.check(); err != nil {
		return err
	}
	s := tx.s
	_, err := s.wconn.ExecContext(ctx, `INSERT INTO version_conflicts (consumer, tenant, subject, version, kept_event_id, conflicting_id, conflicting_event, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, c.Consumer, c.Tenant, c.Subject, c.Version, c.KeptEventID, c.ConflictingID, c.ConflictingEvent, tx.now)
	if err != nil {
		return fmt.Errorf("record version conflict: %w", mapErr(err))
	}
	return nil
}

// Conflicts lists the unresolved version conflicts of consumer ("" for all).
func (c *Consumers) Conflicts(ctx context.Context, consumer string) ([]VersionConflict, error) {
	s := c.s
	rows, err := s.rdb.QueryContext(ctx, `SELECT id, consumer, tenant, subject, version, kept_event_id, conflicting_id, conflicting_event, created_at
		FROM version_conflicts WHERE (? = '' OR consumer = ?) AND resolved_at IS NULL ORDER BY id`, consumer, consumer)
	if err != nil {
		return nil, mapErr(err)
	}
	defer rows.Close()
	var out []VersionConflict
	for rows.Next() {
		var c VersionConflict
		var at int64
		if err := rows.Scan(&c.ID, &c.Consumer, &c.Tenant, &c.Subject, &c.Version, &c.KeptEventID, &c.ConflictingID, &c.ConflictingEvent, &at); err != nil {
			return nil, err
		}
		c.CreatedAt = time.Unix(0, at).UTC()
		out = append(out, c)
	}
	return out, mapErr(rows.Err())
}

// CountConsumer adds to a consumer's counters.
func (tx *Tx) CountConsumer(ctx context.Context, consumer string, applied, duplicates, stale int) error {
	if err := tx.check(); err != nil {
		return err
	}
	s := tx.s
	_, err := s.wconn.ExecContext(ctx, `INSERT INTO consumer_stats (consumer, applied, duplicates, stale) VALUES (?, ?, ?, ?)
		ON CONFLICT (consumer) DO UPDATE SET applied = applied + excluded.applied, duplicates = duplicates + excluded.duplicates, stale = stale + excluded.stale`,
		consumer, applied, duplicates, stale)
	return mapErr(err)
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
	st := ConsumerStats{Consumer: consumer}
	var oldest sql.NullInt64
	err := s.rdb.QueryRowContext(ctx, `SELECT
		COALESCE((SELECT applied FROM consumer_stats WHERE consumer = ?1), 0),
		COALESCE((SELECT duplicates FROM consumer_stats WHERE consumer = ?1), 0),
		COALESCE((SELECT stale FROM consumer_stats WHERE consumer = ?1), 0),
		(SELECT count(*) FROM deferred WHERE consumer = ?1),
		(SELECT MIN(first_seen) FROM deferred WHERE consumer = ?1),
		(SELECT count(*) FROM version_conflicts WHERE consumer = ?1 AND resolved_at IS NULL),
		(SELECT count(*) FROM quarantine WHERE consumer = ?1 AND resolved_at IS NULL)`, consumer).
		Scan(&st.Applied, &st.Duplicates, &st.Stale, &st.Deferred, &oldest, &st.Conflicts, &st.Quarantined)
	if err != nil {
		return st, mapErr(err)
	}
	if oldest.Valid {
		st.OldestDeferred = time.Unix(0, oldest.Int64).UTC()
	}
	return st, nil
}
