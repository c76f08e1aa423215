package pgdriver

import (
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"

	"github.com/eventlite/eventlite/store/internal/driver"
)

// InboxInsert inserts with ON CONFLICT DO NOTHING and counts the row: a
// second delivery of the message waits for the first one's transaction
// and then inserts nothing.
func (Exec) InboxInsert(ctx context.Context, q driver.Querier, m driver.InboxMessage, now int64) (bool, error) {
	res, err := q.ExecContext(ctx, `INSERT INTO inbox (tenant, consumer, source, message_id, processed_at) VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT DO NOTHING`, m.Tenant, m.Consumer, m.Source, m.MessageID, now)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

const consumerVersionSQL = `SELECT version, event_id FROM consumer_versions WHERE consumer = $1 AND tenant = $2 AND subject = $3 FOR UPDATE`

// ConsumerVersion locks the aggregate's row and reads it. When there is
// no row yet it takes the aggregate's transaction-scoped advisory lock
// and reads again: the second read is a new statement, so it sees a row
// that a transaction holding the lock before committed.
func (Exec) ConsumerVersion(ctx context.Context, q driver.Querier, k driver.AggregateKey) (int64, string, bool, error) {
	version, eventID, ok, err := consumerVersion(ctx, q, k)
	if ok || err != nil {
		return version, eventID, ok, err
	}
	if _, err := q.ExecContext(ctx, `SELECT pg_advisory_xact_lock($1)`, aggregateLockKey(k)); err != nil {
		return 0, "", false, err
	}
	return consumerVersion(ctx, q, k)
}

func consumerVersion(ctx context.Context, q driver.Querier, k driver.AggregateKey) (int64, string, bool, error) {
	var version int64
	var eventID string
	err := q.QueryRowContext(ctx, consumerVersionSQL, k.Consumer, k.Tenant, k.Subject).Scan(&version, &eventID)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, "", false, nil
	}
	return version, eventID, err == nil, err
}

// aggregateLockKey is the advisory lock key of one consumer's aggregate.
// Each part is length-prefixed, so that no two keys hash the same input.
// The key space is the database's, shared by every schema: a collision
// (another schema's aggregate of the same names, or a hash collision)
// only makes one transaction wait for another.
func aggregateLockKey(k driver.AggregateKey) int64 {
	h := fnv.New64a()
	h.Write([]byte("eventlite.consumer_version:"))
	for _, s := range []string{k.Consumer, k.Tenant, k.Subject} {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	return int64(h.Sum64())
}

// SetConsumerVersion upserts the row.
func (Exec) SetConsumerVersion(ctx context.Context, q driver.Querier, k driver.AggregateKey, version int64, eventID string, now int64) error {
	_, err := q.ExecContext(ctx, `INSERT INTO consumer_versions (consumer, tenant, subject, version, event_id, updated_at) VALUES ($1, $2, $3, $4, $5, $6)
		ON CONFLICT (consumer, tenant, subject) DO UPDATE SET version = EXCLUDED.version, event_id = EXCLUDED.event_id, updated_at = EXCLUDED.updated_at`,
		k.Consumer, k.Tenant, k.Subject, version, eventID, now)
	return err
}

// Defer inserts with ON CONFLICT DO NOTHING and, when nothing was
// inserted, locks and reads the row in the way (SELECT ... FOR UPDATE, a
// new statement: it sees the row whose commit the insert waited for).
// Should that row be taken between the two statements, the insert is
// tried once more.
func (Exec) Defer(ctx context.Context, q driver.Querier, d driver.DeferredRow) (driver.DeferredRow, bool, error) {
	for range 2 {
		res, err := q.ExecContext(ctx, `INSERT INTO deferred (consumer, tenant, subject, version, event_id, event, expected, first_seen, reason)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT DO NOTHING`,
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
		err = q.QueryRowContext(ctx, `SELECT event_id, event, expected, first_seen, reason FROM deferred
			WHERE consumer = $1 AND tenant = $2 AND subject = $3 AND version = $4 FOR UPDATE`, d.Consumer, d.Tenant, d.Subject, d.Version).
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
func (Exec) TakeDeferred(ctx context.Context, q driver.Querier, k driver.AggregateKey, version int64) (driver.DeferredRow, bool, error) {
	d := driver.DeferredRow{AggregateKey: k, Version: version}
	err := q.QueryRowContext(ctx, `DELETE FROM deferred WHERE consumer = $1 AND tenant = $2 AND subject = $3 AND version = $4
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
	rows, err := q.QueryContext(ctx, `DELETE FROM deferred WHERE consumer = $1 AND tenant = $2 AND subject = $3 AND version <= $4
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
		WHERE ($1 = '' OR consumer = $1) AND first_seen < $2 ORDER BY first_seen`, consumer, seenBefore)
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

// RecordConflict inserts the conflict; the identity column numbers it.
func (Exec) RecordConflict(ctx context.Context, q driver.Querier, c driver.ConflictRow, now int64) error {
	_, err := q.ExecContext(ctx, `INSERT INTO version_conflicts (consumer, tenant, subject, version, kept_event_id, conflicting_id, conflicting_event, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`, c.Consumer, c.Tenant, c.Subject, c.Version, c.KeptEventID, c.ConflictingID, c.ConflictingEvent, now)
	return err
}

// ListConflicts reads the unresolved conflicts.
func (Exec) ListConflicts(ctx context.Context, q driver.ReadQuerier, consumer string) ([]driver.ConflictRow, error) {
	rows, err := q.QueryContext(ctx, `SELECT id, consumer, tenant, subject, version, kept_event_id, conflicting_id, conflicting_event, created_at
		FROM version_conflicts WHERE ($1 = '' OR consumer = $1) AND resolved_at IS NULL ORDER BY id`, consumer)
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
	_, err := q.ExecContext(ctx, `INSERT INTO consumer_stats (consumer, applied, duplicates, stale) VALUES ($1, $2, $3, $4)
		ON CONFLICT (consumer) DO UPDATE SET applied = consumer_stats.applied + EXCLUDED.applied,
			duplicates = consumer_stats.duplicates + EXCLUDED.duplicates, stale = consumer_stats.stale + EXCLUDED.stale`,
		consumer, applied, duplicates, stale)
	return err
}

// ConsumerStats reads every figure in one statement, so in one snapshot.
func (Exec) ConsumerStats(ctx context.Context, q driver.ReadQuerier, consumer string) (driver.ConsumerStatsRow, error) {
	var st driver.ConsumerStatsRow
	var oldest sql.NullInt64
	err := q.QueryRowContext(ctx, `SELECT
		COALESCE((SELECT applied FROM consumer_stats WHERE consumer = $1), 0),
		COALESCE((SELECT duplicates FROM consumer_stats WHERE consumer = $1), 0),
		COALESCE((SELECT stale FROM consumer_stats WHERE consumer = $1), 0),
		(SELECT count(*) FROM deferred WHERE consumer = $1),
		(SELECT min(first_seen) FROM deferred WHERE consumer = $1),
		(SELECT count(*) FROM version_conflicts WHERE consumer = $1 AND resolved_at IS NULL),
		(SELECT count(*) FROM quarantine WHERE consumer = $1 AND resolved_at IS NULL)`, consumer).
		Scan(&st.Applied, &st.Duplicates, &st.Stale, &st.Deferred, &oldest, &st.Conflicts, &st.Quarantined)
	st.OldestDeferred = oldest.Int64
	return st, err
}
