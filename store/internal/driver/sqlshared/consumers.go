package sqlshared

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/eventlite/eventlite/store/internal/driver"
)

// InboxInsert inserts with ON CONFLICT DO NOTHING and counts the row: a
// second delivery of the message waits for the first one's transaction
// and then inserts nothing.
func (x Exec[D]) InboxInsert(ctx context.Context, q driver.Querier, m driver.InboxMessage, now int64) (bool, error) {
	res, err := q.ExecContext(ctx, x.bind(`INSERT INTO inbox (tenant, consumer, source, message_id, processed_at) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT DO NOTHING`), m.Tenant, m.Consumer, m.Source, m.MessageID, now)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// SetConsumerVersion upserts the row.
func (x Exec[D]) SetConsumerVersion(ctx context.Context, q driver.Querier, k driver.AggregateKey, version int64, eventID string, now int64) error {
	_, err := q.ExecContext(ctx, x.bind(`INSERT INTO consumer_versions (consumer, tenant, subject, version, event_id, updated_at) VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (consumer, tenant, subject) DO UPDATE SET version = EXCLUDED.version, event_id = EXCLUDED.event_id, updated_at = EXCLUDED.updated_at`),
		k.Consumer, k.Tenant, k.Subject, version, eventID, now)
	return err
}

// Defer inserts with ON CONFLICT DO NOTHING and, when nothing was
// inserted, reads (and holds) the row in the way: on PostgreSQL a new
// statement, which sees the row whose commit the insert waited for, on
// SQLite under the writer's lock. Should that row be taken between the
// two statements (PostgreSQL only), the insert is tried once more.
func (x Exec[D]) Defer(ctx context.Context, q driver.Querier, d driver.DeferredRow) (driver.DeferredRow, bool, error) {
	for range 2 {
		res, err := q.ExecContext(ctx, x.bind(`INSERT INTO deferred (consumer, tenant, subject, version, event_id, event, expected, first_seen, reason)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`),
			d.Consumer, d.Tenant, d.Subject, d.Version, d.EventID, d.Event, d.Expected, d.FirstSeen, d.Reason)
		if err != nil {
			return driver.DeferredRow{}, false, err
		}
		n, err := res.RowsAffected()
		if err != nil {
			return driver.DeferredRow{}, false, err
		}
		if n == 1 {
			return driver.DeferredRow{}, false, nil
		}
		existing := driver.DeferredRow{AggregateKey: d.AggregateKey, Version: d.Version}
		err = q.QueryRowContext(ctx, x.bind(`SELECT event_id, event, expected, first_seen, reason FROM deferred
			WHERE consumer = ? AND tenant = ? AND subject = ? AND version = ?`+x.dialect().ForUpdate()), d.Consumer, d.Tenant, d.Subject, d.Version).
			Scan(&existing.EventID, &existing.Event, &existing.Expected, &existing.FirstSeen, &existing.Reason)
		if errors.Is(err, sql.ErrNoRows) {
			continue
		}
		if err != nil {
			return driver.DeferredRow{}, false, err
		}
		return existing, true, nil
	}
	return driver.DeferredRow{}, false, fmt.Errorf("defer %s v%d: the event in its way was taken twice while it was stored: retry", d.Subject, d.Version)
}

// TakeDeferred deletes the row and returns it in one statement.
func (x Exec[D]) TakeDeferred(ctx context.Context, q driver.Querier, k driver.AggregateKey, version int64) (driver.DeferredRow, bool, error) {
	d := driver.DeferredRow{AggregateKey: k, Version: version}
	err := q.QueryRowContext(ctx, x.bind(`DELETE FROM deferred WHERE consumer = ? AND tenant = ? AND subject = ? AND version = ?
		RETURNING event_id, event, expected, first_seen, reason`), k.Consumer, k.Tenant, k.Subject, version).
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
func (x Exec[D]) DropStaleDeferred(ctx context.Context, q driver.Querier, k driver.AggregateKey, version int64) ([]driver.DeferredRow, error) {
	rows, err := q.QueryContext(ctx, x.bind(`DELETE FROM deferred WHERE consumer = ? AND tenant = ? AND subject = ? AND version <= ?
		RETURNING version, event_id, event, expected, first_seen, reason`), k.Consumer, k.Tenant, k.Subject, version)
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
func (x Exec[D]) ListDeferred(ctx context.Context, q driver.ReadQuerier, consumer string, seenBefore int64) ([]driver.DeferredRow, error) {
	rows, err := q.QueryContext(ctx, x.bind(`SELECT consumer, tenant, subject, version, event_id, event, expected, first_seen, reason FROM deferred
		WHERE (? = '' OR consumer = ?) AND first_seen < ? ORDER BY first_seen`), consumer, consumer, seenBefore)
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
func (x Exec[D]) RecordConflict(ctx context.Context, q driver.Querier, c driver.ConflictRow, now int64) error {
	_, err := q.ExecContext(ctx, x.bind(`INSERT INTO version_conflicts (consumer, tenant, subject, version, kept_event_id, conflicting_id, conflicting_event, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)`), c.Consumer, c.Tenant, c.Subject, c.Version, c.KeptEventID, c.ConflictingID, c.ConflictingEvent, now)
	return err
}

// ListConflicts reads the unresolved conflicts.
func (x Exec[D]) ListConflicts(ctx context.Context, q driver.ReadQuerier, consumer string) ([]driver.ConflictRow, error) {
	rows, err := q.QueryContext(ctx, x.bind(`SELECT id, consumer, tenant, subject, version, kept_event_id, conflicting_id, conflicting_event, created_at
		FROM version_conflicts WHERE (? = '' OR consumer = ?) AND resolved_at IS NULL ORDER BY id`), consumer, consumer)
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
func (x Exec[D]) CountConsumer(ctx context.Context, q driver.Querier, consumer string, applied, duplicates, stale int) error {
	_, err := q.ExecContext(ctx, x.bind(`INSERT INTO consumer_stats (consumer, applied, duplicates, stale) VALUES (?, ?, ?, ?)
		ON CONFLICT (consumer) DO UPDATE SET applied = consumer_stats.applied + EXCLUDED.applied,
			duplicates = consumer_stats.duplicates + EXCLUDED.duplicates, stale = consumer_stats.stale + EXCLUDED.stale`),
		consumer, applied, duplicates, stale)
	return err
}

// ConsumerStats reads every figure in one statement, so in one snapshot.
func (x Exec[D]) ConsumerStats(ctx context.Context, q driver.ReadQuerier, consumer string) (driver.ConsumerStatsRow, error) {
	var st driver.ConsumerStatsRow
	var oldest sql.NullInt64
	err := q.QueryRowContext(ctx, x.bind(`SELECT
		COALESCE((SELECT applied FROM consumer_stats WHERE consumer = ?), 0),
		COALESCE((SELECT duplicates FROM consumer_stats WHERE consumer = ?), 0),
		COALESCE((SELECT stale FROM consumer_stats WHERE consumer = ?), 0),
		(SELECT count(*) FROM deferred WHERE consumer = ?),
		(SELECT min(first_seen) FROM deferred WHERE consumer = ?),
		(SELECT count(*) FROM version_conflicts WHERE consumer = ? AND resolved_at IS NULL),
		(SELECT count(*) FROM quarantine WHERE consumer = ? AND resolved_at IS NULL)`), consumer, consumer, consumer, consumer, consumer, consumer, consumer).
		Scan(&st.Applied, &st.Duplicates, &st.Stale, &st.Deferred, &oldest, &st.Conflicts, &st.Quarantined)
	st.OldestDeferred = oldest.Int64
	return st, err
}
