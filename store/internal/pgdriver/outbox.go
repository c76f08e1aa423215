package pgdriver

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/eventlite/eventlite/store/internal/driver"
	"github.com/eventlite/eventlite/store/internal/driver/sqlshared"
)

// The outbox's tables: outbox holds the ledger rows, outbox_watermark the
// one row of W (settled) and C (scanned), outbox_counters the totals.
// Every write transaction locks the head row first, so the writer's
// transaction makes each write method atomic, as SQLite's write lock
// does: the fence check, the ledger writes and the watermark move see no
// other writer, and no position commits later below one already
// committed. The write methods lock the watermark row anyway (FOR
// UPDATE), and CheckFence locks the lease row, so that they stay atomic
// if a caller ever runs them outside the writer.
//
// Batches travel as arrays (unnest), one statement each, with every
// parameter cast: a parameter PostgreSQL cannot type from its context
// would be text.

// outboxColumns are SelectEvents' columns on the events table aliased e,
// then the ledger row's own (o, left-joined: a pending event that never
// failed has no row).
const outboxColumns = `e.position, e.tenant, e.stream_id, e.version, e.event_id, e.type, e.source, e.time,
	e.content_type, e.data, e.data_schema, e.correlation_id, e.causation_id, e.extensions,
	COALESCE(o.attempts, 0), o.first_failed_at, o.last_error`

// outboxRowOf joins an event e to its outbox row o (none: NULLs), read
// through the outbox's primary key for each event in turn. OFFSET 0 keeps
// PostgreSQL from turning the lookup into a join, whose outbox side would
// scan the outbox from its first row (or all of it, for a hash join): the
// position bounds of a query are on e, and a read or watermark move that
// stops at its first rows must not pay for every row published below.
const outboxRowOf = `LEFT JOIN LATERAL (SELECT o.* FROM outbox o WHERE o.position = e.position OFFSET 0) o ON true`

// Unsettled is sqlshared.Unsettled.
const Unsettled = sqlshared.Unsettled

// FailingRow is sqlshared.FailingRow.
const FailingRow = sqlshared.FailingRow

// heldStream holds for an event e whose stream the relay must hold back
// at time $1 for a read above position $2: one with a pending dead letter
// (parked), a pending row whose next attempt is still to come, or a
// pending row that failed before and lies at or below $2 (the read would
// skip it and pass its stream's later rows). It reads the outbox_failing
// index only.
const heldStream = `EXISTS (SELECT 1 FROM outbox f JOIN events h ON h.position = f.position
	WHERE ` + FailingRow + ` AND h.tenant = e.tenant AND h.stream_id = e.stream_id
	AND (f.dead_at IS NOT NULL OR f.next_attempt_at > $1 OR f.position <= $2::bigint))`

// readFrom is the position a relay's read starts above. $1 now, $2
// after. A read that goes on from a batch (after > 0) starts above
// after, never at or below W. A read from the start starts above the
// cursor, max(W, C), or just below the oldest failed row that is due for
// another attempt when that lies lower: its stream's waiting events are
// below C.
const readFrom = `(SELECT CASE WHEN $2::bigint > 0 THEN GREATEST(w.settled, $2::bigint)
	ELSE GREATEST(w.settled, LEAST(GREATEST(w.settled, w.scanned), COALESCE((SELECT min(f.position) - 1 FROM outbox f
		WHERE ` + FailingRow + ` AND f.dead_at IS NULL AND f.next_attempt_at <= $1), w.scanned))) END
	FROM outbox_watermark w)`

// ReadOutboxQuery reads pending events above readFrom in position order,
// skipping held streams. $1 now, $2 after, $3 limit. readFrom is an
// uncorrelated subquery: PostgreSQL evaluates it once, and walks the
// events' primary key from there.
const ReadOutboxQuery = `SELECT ` + outboxColumns + `
	FROM events e ` + outboxRowOf + `
	WHERE e.position > ` + readFrom + ` AND ` + Unsettled + `
	AND NOT ` + heldStream + `
	ORDER BY e.position LIMIT $3`

// ReadOutbox runs ReadOutboxQuery. The head row orders the commits, so
// no event commits later below one this read returns.
func (Exec) ReadOutbox(ctx context.Context, q driver.ReadQuerier, now, after int64, limit int) ([]driver.OutboxRow, error) {
	return sqlshared.ReadOutboxRows(ctx, q, ReadOutboxQuery, now, after, limit, newOutboxScanner().scan)
}

// outboxScanner scans rows of outboxColumns: an EventScanner whose
// destinations go on with the ledger row's.
type outboxScanner struct {
	ev       *EventScanner
	attempts int64
	ff       sql.NullInt64
	lastErr  sql.NullString
}

func newOutboxScanner() *outboxScanner {
	s := &outboxScanner{ev: NewEventScanner()}
	s.ev.dest = append(s.ev.dest, &s.attempts, &s.ff, &s.lastErr)
	return s
}

func (s *outboxScanner) scan(rows *sql.Rows) (driver.OutboxRow, error) {
	s.ff, s.lastErr = sql.NullInt64{}, sql.NullString{}
	e, err := s.ev.Scan(rows)
	if err != nil {
		return driver.OutboxRow{}, err
	}
	r := driver.OutboxRow{Event: e, Attempts: int(s.attempts), LastError: s.lastErr.String}
	if s.ff.Valid {
		r.FirstFailedAt = time.Unix(0, s.ff.Int64).UTC()
	}
	return r, nil
}

// fenceHeld is CheckFence: the relay's writes check their fence first, in
// their transaction, and the lease row stays locked until it ends.
func fenceHeld(ctx context.Context, q driver.Querier, f driver.Fence) (bool, error) {
	return Exec{}.CheckFence(ctx, q, f)
}

// MarkPublished lowers C, then marks the batch, each in one statement on
// the batch's arrays of positions and sequences.
func (Exec) MarkPublished(ctx context.Context, q driver.Querier, fence driver.Fence, now int64, rows []driver.Published) (int64, bool, error) {
	if held, err := fenceHeld(ctx, q, fence); err != nil || !held {
		return 0, held, err
	}
	if err := (Exec{}).LockWatermark(ctx, q); err != nil {
		return 0, true, err
	}
	positions, seqs := make([]int64, len(rows)), make([]int64, len(rows))
	for i, r := range rows {
		// BIGINT holds a sequence above 2^63-1 as its two's complement;
		// OutboxEntries reads it back as the same uint64.
		positions[i], seqs[i] = r.Position, int64(r.BrokerSequence)
	}
	// A row that had failed leaves the failed rows: its stream's waiting
	// events below the cursor must be read again.
	if _, err := q.ExecContext(ctx, `UPDATE outbox_watermark SET scanned = LEAST(scanned, COALESCE(
		(SELECT min(f.position) - 1 FROM outbox f WHERE f.position = ANY($1::bigint[]) AND `+FailingRow+`), scanned))`,
		positions); err != nil {
		return 0, true, err
	}
	res, err := q.ExecContext(ctx, MarkPublishedQuery, now, fence.Token, positions, seqs)
	if err != nil {
		return 0, true, err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, true, err
	}
	if err := sqlshared.AddCounter(ctx, q, counterSQL, "published", n); err != nil {
		return 0, true, err
	}
	return n, true, Exec{}.AdvanceOutbox(ctx, q)
}

// MarkPublishedQuery marks a batch: $1 now, $2 lease token, $3 the
// positions, $4 their sequences. One statement for the batch: it writes
// a row for each event that has none (most of them) and marks a failed
// row published; a row already published or discarded keeps its facts
// (the upsert's WHERE leaves it, and it is not counted). Positions
// without an event are skipped (the join). A position given twice counts
// once, with its first sequence, as in SQLite, where the second finds
// the row published (PostgreSQL refuses an upsert that reaches one row
// twice).
const MarkPublishedQuery = `INSERT INTO outbox (position, published_at, published_token, broker_sequence)
	SELECT DISTINCT ON (e.position) e.position, $1::bigint, $2::bigint, NULLIF(v.seq, 0)
	FROM unnest($3::bigint[], $4::bigint[]) WITH ORDINALITY AS v (position, seq, i)
	JOIN events e ON e.position = v.position ORDER BY e.position, v.i
	ON CONFLICT (position) DO UPDATE SET published_at = EXCLUDED.published_at, published_token = EXCLUDED.published_token,
		broker_sequence = EXCLUDED.broker_sequence, next_attempt_at = NULL
	WHERE outbox.published_at IS NULL AND outbox.discarded_at IS NULL`

// RecordFailuresQuery records a batch of failures: $1 now, $2 the
// positions, $3 the errors, $4 the next attempts. An event without a row
// gets one; a row no longer pending, or dead, is left as it is (the
// upsert's WHERE, and it is not counted). A position given k times
// counts k attempts and keeps its last failure's facts, as k upserts in
// a row would (PostgreSQL refuses an upsert that reaches one row twice).
// It returns the attempts recorded, for the retried counter.
const RecordFailuresQuery = `WITH v AS (
		SELECT position, count(*) AS n, (array_agg(error ORDER BY i DESC))[1] AS error,
			(array_agg(next_attempt_at ORDER BY i DESC))[1] AS next_attempt_at
		FROM unnest($2::bigint[], $3::text[], $4::bigint[]) WITH ORDINALITY AS u (position, error, next_attempt_at, i)
		GROUP BY position),
	up AS (
		INSERT INTO outbox (position, attempts, first_failed_at, last_failed_at, last_error, next_attempt_at)
		SELECT e.position, v.n, $1::bigint, $1::bigint, v.error, v.next_attempt_at FROM v JOIN events e ON e.position = v.position
		ON CONFLICT (position) DO UPDATE SET attempts = outbox.attempts + EXCLUDED.attempts,
			first_failed_at = COALESCE(outbox.first_failed_at, EXCLUDED.first_failed_at), last_failed_at = EXCLUDED.last_failed_at,
			last_error = EXCLUDED.last_error, next_attempt_at = EXCLUDED.next_attempt_at
		WHERE outbox.published_at IS NULL AND outbox.discarded_at IS NULL AND outbox.dead_at IS NULL
		RETURNING position)
	SELECT COALESCE(sum(v.n), 0) FROM up JOIN v ON v.position = up.position`

// RecordFailures runs RecordFailuresQuery on the batch.
func (Exec) RecordFailures(ctx context.Context, q driver.Querier, fence driver.Fence, now int64, failures []driver.Failure) (bool, error) {
	if held, err := fenceHeld(ctx, q, fence); err != nil || !held {
		return held, err
	}
	if err := (Exec{}).LockWatermark(ctx, q); err != nil {
		return true, err
	}
	positions, errs, next := make([]int64, len(failures)), make([]string, len(failures)), make([]int64, len(failures))
	for i, f := range failures {
		positions[i], errs[i], next[i] = f.Position, f.Error, f.NextAttemptAt
	}
	var n int64
	if err := q.QueryRowContext(ctx, RecordFailuresQuery, now, positions, errs, next).Scan(&n); err != nil {
		return true, err
	}
	if err := sqlshared.AddCounter(ctx, q, counterSQL, "retried", n); err != nil {
		return true, err
	}
	return true, Exec{}.AdvanceOutbox(ctx, q)
}

// MarkDeadQuery turns a batch into dead rows: $1 now, $2 the positions,
// $3 the errors. As RecordFailuresQuery, but a row already dead is left
// as it is, so a position given twice counts once, with its first error.
const MarkDeadQuery = `INSERT INTO outbox (position, attempts, first_failed_at, last_failed_at, last_error, dead_at)
	SELECT DISTINCT ON (e.position) e.position, 1, $1::bigint, $1::bigint, v.error, $1::bigint
	FROM unnest($2::bigint[], $3::text[]) WITH ORDINALITY AS v (position, error, i)
	JOIN events e ON e.position = v.position ORDER BY e.position, v.i
	ON CONFLICT (position) DO UPDATE SET attempts = outbox.attempts + 1,
		first_failed_at = COALESCE(outbox.first_failed_at, EXCLUDED.first_failed_at), last_failed_at = EXCLUDED.last_failed_at,
		last_error = EXCLUDED.last_error, dead_at = EXCLUDED.dead_at, next_attempt_at = NULL
	WHERE outbox.published_at IS NULL AND outbox.discarded_at IS NULL AND outbox.dead_at IS NULL`

// MarkDead runs MarkDeadQuery on the batch.
func (Exec) MarkDead(ctx context.Context, q driver.Querier, fence driver.Fence, now int64, failures []driver.Failure) (bool, error) {
	if held, err := fenceHeld(ctx, q, fence); err != nil || !held {
		return held, err
	}
	if err := (Exec{}).LockWatermark(ctx, q); err != nil {
		return true, err
	}
	positions, errs := make([]int64, len(failures)), make([]string, len(failures))
	for i, f := range failures {
		positions[i], errs[i] = f.Position, f.Error
	}
	res, err := q.ExecContext(ctx, MarkDeadQuery, now, positions, errs)
	if err != nil {
		return true, fmt.Errorf("dead-letter outbox rows: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return true, err
	}
	if err := sqlshared.AddCounter(ctx, q, counterSQL, "dead_lettered", n); err != nil {
		return true, err
	}
	return true, Exec{}.AdvanceOutbox(ctx, q)
}

// SelectDeadLetters is sqlshared.SelectDeadLetters.
const SelectDeadLetters = sqlshared.SelectDeadLetters
