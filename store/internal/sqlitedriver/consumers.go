package sqlitedriver

import (
	"context"
	"database/sql"
	"errors"

	"github.com/eventlite/eventlite/store/internal/driver"
)

// InboxInsert inserts with ON CONFLICT DO NOTHING and counts the row.
func (Exec) InboxInsert(ctx context.Context, q driver.Querier, m driver.InboxMessage, now int64) (bool, error) {
	res, err := q.ExecContext(ctx, `INSERT INTO inbox (tenant, consumer, source, message_id, processed_at) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT DO NOTHING`, m.Tenant, m.Consumer, m.Source, m.MessageID, now)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// ConsumerVersion reads the row; the store's write lock holds it.
func (Exec) ConsumerVersion(ctx context.Context, q driver.Querier, k driver.AggregateKey) (int64, string, bool, error) {
	var version int64
	var eventID string
	err := q.QueryRowContext(ctx, `SELECT version, event_id FROM consumer_versions WHERE consumer = ? AND tenant = ? AND subject = ?`,
		k.Consumer, k.Tenant, k.Subject).Scan(&version, &eventID)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, "", false, nil
	}
	return version, eventID, err == nil, err
}

// SetConsumerVersion upserts the row.
func (Exec) SetConsumerVersion(ctx context.Context, q driver.Querier, k driver.AggregateKey, version int64, eventID string, now int64) error {
	_, err := q.ExecContext(ctx, `INSERT INTO consumer_versions (consumer, tenant, subject, version, event_id, updated_at) VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (consumer, tenant, subject) DO UPDATE SET version = excluded.version, event_id = excluded.event_id, updated_at = excluded.updated_at`,
		k.Consumer, k.Tenant, k.Subject, version, eventID, now)
	return err
}

// Defer inserts with ON CONFLICT DO NOTHING, then reads the row in the
// way when nothing was inserted; the write lock keeps the pair atomic.
func (Exec) Defer(ctx context.Context, q driver.Querier, d driver.DeferredRow) (driver.DeferredRow, bool, error) {
	res, err := q.ExecContext(ctx, `INSERT INTO deferred (consumer, tenant, subject, version, event_id, event, expected, first_seen, reason)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
		d.Consumer, d.Tenant, d.Subject, d.Version, d.EventID, d.Event, d.Expected, d.FirstSeen, d.Reason)
	if err != nil {
		return driver.DeferredRow{}, false, err
	}
	if n, _ := res.RowsAffected(); n == 1 {
		return driver.DeferredRow{}, false, nil
	}
	existing := driver.DeferredRow{AggregateKey: d.AggregateKey, Version: d.Version}
	err = q.QueryRowContext(ctx, `SELECT event_id, event, expected, first_seen, reason FROM deferred
		WHERE consumer = ? AND tenant = ? AND subject = ? AND version = ?`, d.Consumer, d.Tenant, d.Subject, d.Version).
		Scan(&existing.EventID, &existing.Event, &existing.Expected, &existing.FirstSeen, &existing.Reason)
	if errors.Is(err, sql.ErrNoRows) {
		return driver.DeferredRow{}, false, nil
	}
	if err != nil {
		return driver.DeferredRow{}, false, err
	}
	return existing, true, nil
}

// TakeDeferred deletes the row and returns it in one statement.
func (Exec) TakeDeferred(ctx context.Context, q driver.Querier, k driver.AggregateKey, version int64) (driver.DeferredRow, bool, error) {
	d := driver.DeferredRow{AggregateKey: k, Version: version}
	err := q.QueryRowContext(ctx, `DELETE FROM deferred WHERE consumer = ? AND tenant = ? AND subject = ? AND version = ?
		RETURNING event_id, event, expected, first_seen, reason`, k.Consumer, k.Tenant, k.Subject, version).
		Scan(&d.EventID, &d.Event, &d.Expected, &d.FirstSeen, &d.Reason)
	if errors.Is(err, sql.ErrNoRows) {
		return driver.DeferredRow{}, false, nil
	}
	if err != nil {
		return driver.DeferredRow{}, false, err
	}
	return d, true, nil
}

// DropStaleDeferred deletes with RETURNING.
func (Exec) DropStaleDeferred(ctx context.Context, q driver.Querier, k driver.AggregateKey, version int64) ([]driver.DeferredRow, error) {
	rows, err := q.QueryContext(ctx, `DELETE FROM deferred WHERE consumer = ? AND tenant = ? AND subject = ? AND version <= ?
		RETURNING version, event_id, event, expected, first_seen, reason`, k.Consumer, k.Tenant, k.Subject, version)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []driver.DeferredRow
	for rows.Next() {
		d := driver.DeferredRow{AggregateKey: k}
		if err := rows.Scan(&d.Version, &d.EventID, &d.Event, &d.Expected, &d.FirstSeen, &d.Reason); err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, rows.Err()
}

// ListDeferred reads the deferred table.
func (Exec) ListDeferred(ctx context.Context, q driver.ReadQuerier, consumer string, seenBefore int64) ([]driver.DeferredRow, error) {
	rows, err := q.QueryContext(ctx, `SELECT consumer, tenant, subject, version, event_id, event, expected, first_seen, reason FROM deferred
		WHERE (? = '' OR consumer = ?) AND first_seen < ? ORDER BY first_seen`, consumer, consumer, seenBefore)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []driver.DeferredRow
	for rows.Next() {
		var d driver.DeferredRow
		if err := rows.Scan(&d.Consumer, &d.Tenant, &d.Subject, &d.Version, &d.EventID, &d.Event, &d.Expected, &d.FirstSeen, &d.Reason); err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, rows.Err()
}

// RecordConflict inserts the conflict.
func (Exec) RecordConflict(ctx context.Context, q driver.Querier, c driver.ConflictRow, now int64) error {
	_, err := q.ExecContext(ctx, `INSERT INTO version_conflicts (consumer, tenant, subject, version, kept_event_id, conflicting_id, conflicting_event, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, c.Consumer, c.Tenant, c.Subject, c.Version, c.KeptEventID, c.ConflictingID, c.ConflictingEvent, now)
	return err
}

// ListConflicts reads the unresolved conflicts.
func (Exec) ListConflicts(ctx context.Context, q driver.ReadQuerier, consumer string) ([]driver.ConflictRow, error) {
	rows, err := q.QueryContext(ctx, `SELECT id, consumer, tenant, subject, version, kept_event_id, conflicting_id, conflicting_event, created_at
		FROM version_conflicts WHERE (? = '' OR consumer = ?) AND resolved_at IS NULL ORDER BY id`, consumer, consumer)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []driver.ConflictRow
	for rows.Next() {
		var c driver.ConflictRow
		if err := rows.Scan(&c.ID, &c.Consumer, &c.Tenant, &c.Subject, &c.Version, &c.KeptEventID, &c.ConflictingID, &c.ConflictingEvent, &c.CreatedAt); err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// CountConsumer upserts the counters, adding in the statement.
func (Exec) CountConsumer(ctx context.Context, q driver.Querier, consumer string, applied, duplicates, stale int) error {
	_, err := q.ExecContext(ctx, `INSERT INTO consumer_stats (consumer, applied, duplicates, stale) VALUES (?, ?, ?, ?)
		ON CONFLICT (consumer) DO UPDATE SET applied = applied + excluded.applied, duplicates = duplicates + excluded.duplicates, stale = stale + excluded.stale`,
		consumer, applied, duplicates, stale)
	return err
}

// ConsumerStats reads every figure in one statement.
func (Exec) ConsumerStats(ctx context.Context, q driver.ReadQuerier, consumer string) (driver.ConsumerStatsRow, error) {
	var st driver.ConsumerStatsRow
	var oldest sql.NullInt64
	err := q.QueryRowContext(ctx, `SELECT
		COALESCE((SELECT applied FROM consumer_stats WHERE consumer = ?1), 0),
		COALESCE((SELECT duplicates FROM consumer_stats WHERE consumer = ?1), 0),
		COALESCE((SELECT stale FROM consumer_stats WHERE consumer = ?1), 0),
		(SELECT count(*) FROM deferred WHERE consumer = ?1),
		(SELECT MIN(first_seen) FROM deferred WHERE consumer = ?1),
		(SELECT count(*) FROM version_conflicts WHERE consumer = ?1 AND resolved_at IS NULL),
		(SELECT count(*) FROM quarantine WHERE consumer = ?1 AND resolved_at IS NULL)`, consumer).
		Scan(&st.Applied, &st.Duplicates, &st.Stale, &st.Deferred, &oldest, &st.Conflicts, &st.Quarantined)
	st.OldestDeferred = oldest.Int64
	return st, err
}
