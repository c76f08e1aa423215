package sqlshared

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/eventlite/eventlite/store/internal/driver"
)

// The outbox's reads that both engines run alike, and its counters. The
// relay's read and its marks, the watermark's moves and the dead
// letters' requeue and discard are each engine's own (the relay is a hot
// path, and PostgreSQL locks the watermark row where SQLite holds its
// write lock).

// Unsettled holds for an event e joined to its outbox row o when the
// event is neither published nor discarded (without a row, or with one
// that is neither).
const Unsettled = `(o.position IS NULL OR (o.published_at IS NULL AND o.discarded_at IS NULL))`

// deadRow holds for an outbox row o that is a dead letter (through the
// outbox_failing index).
const deadRow = `o.published_at IS NULL AND o.discarded_at IS NULL AND o.attempts > 0 AND o.dead_at IS NOT NULL`

// OutboxNextAttempt reads the outbox_failing index.
func (Exec[D]) OutboxNextAttempt(ctx context.Context, q driver.ReadQuerier) (int64, bool, error) {
	var next sql.NullInt64
	err := q.QueryRowContext(ctx, `SELECT min(next_attempt_at) FROM outbox
		WHERE published_at IS NULL AND discarded_at IS NULL AND attempts > 0 AND dead_at IS NULL`).Scan(&next)
	return next.Int64, next.Valid, err
}

// CounterSQL moves an outbox counter: value + ? WHERE name = ?. A
// driver binds it once (the relay's marks run it on every batch).
const CounterSQL = `UPDATE outbox_counters SET value = value + ? WHERE name = ?`

// AddCounter moves an outbox counter inside the writer's transaction by
// query, CounterSQL as the driver's engine takes it.
func AddCounter(ctx context.Context, q driver.Querier, query, name string, n int64) error {
	if n == 0 {
		return nil
	}
	if _, err := q.ExecContext(ctx, query, n, name); err != nil {
		return fmt.Errorf("outbox counter %s: %w", name, err)
	}
	return nil
}

// SelectDeadLetters reads the dead letters, through the outbox_failing
// index; a caller appends its conditions.
const SelectDeadLetters = `SELECT e.tenant, e.event_id, e.stream_id, e.version, e.position, e.type,
	o.attempts, COALESCE(o.last_error, ''), COALESCE(o.first_failed_at, 0), COALESCE(o.last_failed_at, 0), o.dead_at
	FROM outbox o JOIN events e ON e.position = o.position
	WHERE ` + deadRow

// ScanDeadLetter scans a row of SelectDeadLetters.
func ScanDeadLetter(r interface{ Scan(dest ...any) error }) (driver.DeadLetter, error) {
	var (
		d            driver.DeadLetter
		ff, lf, dead int64
	)
	if err := r.Scan(&d.Tenant, &d.EventID, &d.Stream, &d.Version, &d.Position, &d.Type,
		&d.Attempts, &d.Error, &ff, &lf, &dead); err != nil {
		return d, err
	}
	d.FirstFailed, d.LastFailed, d.DeadAt = time.Unix(0, ff).UTC(), time.Unix(0, lf).UTC(), time.Unix(0, dead).UTC()
	return d, nil
}

// DeadLetterList reads the dead letters of tenant ("" every tenant's),
// and only the one with eventID when that is not "". lock holds their
// rows until the transaction ends (Dialect.ForUpdateOf the outbox): a
// writer that changes the rows holds them from the read on.
func (x Exec[D]) DeadLetterList(ctx context.Context, q driver.ReadQuerier, tenant, eventID string, lock bool) ([]driver.DeadLetter, error) {
	query, args := SelectDeadLetters, []any{}
	if tenant != "" {
		args = append(args, tenant)
		query += ` AND e.tenant = ?`
	}
	if eventID != "" {
		args = append(args, eventID)
		query += ` AND e.event_id = ?`
	}
	query += ` ORDER BY o.position`
	if lock {
		query += x.dialect().ForUpdateOf("o")
	}
	rows, err := q.QueryContext(ctx, x.bind(query), args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []driver.DeadLetter
	for rows.Next() {
		d, err := ScanDeadLetter(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	if err := rows.Close(); err != nil {
		return nil, err
	}
	return out, rows.Err()
}

// DeadLetters reads the outbox_failing index.
func (x Exec[D]) DeadLetters(ctx context.Context, q driver.ReadQuerier, tenant string) ([]driver.DeadLetter, error) {
	return x.DeadLetterList(ctx, q, tenant, "", false)
}

// ParkedStreams groups the dead letters by stream, then counts each
// stream's pending rows through the stream's own index.
func (x Exec[D]) ParkedStreams(ctx context.Context, q driver.ReadQuerier, tenant string) ([]driver.ParkedStream, error) {
	query := `SELECT e.tenant, e.stream_id, min(e.position), min(e.version) FROM outbox o JOIN events e ON e.position = o.position
		WHERE ` + deadRow
	var args []any
	if tenant != "" {
		query += ` AND e.tenant = ?`
		args = append(args, tenant)
	}
	rows, err := q.QueryContext(ctx, x.bind(query+` GROUP BY e.tenant, e.stream_id ORDER BY 3`), args...)
	if err != nil {
		return nil, err
	}
	type parked struct {
		driver.ParkedStream
		version int64
	}
	var ps []parked
	for rows.Next() {
		var p parked
		if err := rows.Scan(&p.Tenant, &p.Stream, &p.DeadLetter, &p.version); err != nil {
			rows.Close()
			return nil, err
		}
		ps = append(ps, p)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	out := make([]driver.ParkedStream, 0, len(ps))
	for _, p := range ps {
		// The stream's events from its dead letter on, through the
		// stream's own index.
		err := q.QueryRowContext(ctx, x.bind(`SELECT count(*) FROM events e LEFT JOIN outbox o ON o.position = e.position
			WHERE e.tenant = ? AND e.stream_id = ? AND e.version >= ? AND `+Unsettled),
			p.Tenant, p.Stream, p.version).Scan(&p.Waiting)
		if err != nil {
			return nil, err
		}
		out = append(out, p.ParkedStream)
	}
	return out, nil
}

// OutboxEntries joins the events to their ledger rows
// (Dialect.OutboxRowOf).
func (x Exec[D]) OutboxEntries(ctx context.Context, q driver.ReadQuerier, after int64, limit int) ([]driver.OutboxEntry, error) {
	rows, err := q.QueryContext(ctx, x.bind(`SELECT e.position, e.tenant, e.event_id, e.stream_id, e.version, COALESCE(o.attempts, 0),
		COALESCE(o.last_error, ''), o.next_attempt_at, o.first_failed_at, o.last_failed_at, o.dead_at, o.discarded_at,
		o.published_at, COALESCE(o.broker_sequence, 0), COALESCE(o.published_token, 0), e.recorded_at
		FROM events e `+x.dialect().OutboxRowOf()+` WHERE e.position > ? ORDER BY e.position LIMIT ?`), after, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []driver.OutboxEntry
	for rows.Next() {
		var (
			x                             driver.OutboxEntry
			next, ff, lf, dead, disc, pub sql.NullInt64
			seq, rec                      int64
		)
		if err := rows.Scan(&x.Position, &x.Tenant, &x.EventID, &x.Stream, &x.Version, &x.Attempts, &x.LastError,
			&next, &ff, &lf, &dead, &disc, &pub, &seq, &x.PublishedToken, &rec); err != nil {
			return nil, err
		}
		x.BrokerSequence, x.RecordedAt = uint64(seq), time.Unix(0, rec).UTC()
		x.NextAttemptAt, x.FirstFailedAt, x.LastFailedAt = outboxTime(next), outboxTime(ff), outboxTime(lf)
		x.DeadAt, x.DiscardedAt, x.PublishedAt = outboxTime(dead), outboxTime(disc), outboxTime(pub)
		out = append(out, x)
	}
	return out, rows.Err()
}

func outboxTime(n sql.NullInt64) time.Time {
	if !n.Valid {
		return time.Time{}
	}
	return time.Unix(0, n.Int64).UTC()
}
