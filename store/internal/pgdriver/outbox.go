package pgdriver

import (
	"context"
	"database/sql"
	"errors"
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

// deadRow holds for an outbox row o that is a dead letter (also through
// the outbox_failing index).
const deadRow = `o.published_at IS NULL AND o.discarded_at IS NULL AND o.attempts > 0 AND o.dead_at IS NOT NULL`

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
	rows, err := q.QueryContext(ctx, ReadOutboxQuery, now, after, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := make([]driver.OutboxRow, 0, min(limit, 1024))
	sc := newOutboxScanner()
	for rows.Next() {
		r, err := sc.scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return out, nil
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

// lockWatermark locks the watermark row for the rest of the transaction:
// every outbox write takes it before it writes a ledger row.
func lockWatermark(ctx context.Context, q driver.Querier) error {
	var id int64
	if err := q.QueryRowContext(ctx, `SELECT id FROM outbox_watermark FOR UPDATE`).Scan(&id); err != nil {
		return fmt.Errorf("lock the outbox watermark: %w", err)
	}
	return nil
}

// MarkPublished lowers C, then marks the batch, each in one statement on
// the batch's arrays of positions and sequences.
func (Exec) MarkPublished(ctx context.Context, q driver.Querier, fence driver.Fence, now int64, rows []driver.Published) (int64, bool, error) {
	if held, err := fenceHeld(ctx, q, fence); err != nil || !held {
		return 0, held, err
	}
	if err := lockWatermark(ctx, q); err != nil {
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
	return n, true, advanceOutbox(ctx, q)
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
	if err := lockWatermark(ctx, q); err != nil {
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
	return true, advanceOutbox(ctx, q)
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
	if err := lockWatermark(ctx, q); err != nil {
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
	return true, advanceOutbox(ctx, q)
}

// outboxStep is the most positions one transaction moves W or C over.
// Once a stream parked for long is resolved they may pass every event
// published since; the relay's next batches move them on from there, so
// no transaction holds the writer for a scan of the whole log.
const outboxStep = 1 << 20

// AdvanceSettledQuery finds the first event in ($1, $2] that is not
// settled: W stops just below it.
const AdvanceSettledQuery = `SELECT e.position FROM events e ` + outboxRowOf + `
	WHERE e.position > $1 AND e.position <= $2 AND ` + Unsettled + ` ORDER BY e.position LIMIT 1`

// AdvanceScannedQuery finds the first event in ($1, $2] that is neither
// settled nor behind a failed row of its stream: C stops just below it.
const AdvanceScannedQuery = `WITH failing (tenant, stream_id, position) AS MATERIALIZED (
		SELECT e.tenant, e.stream_id, min(f.position) FROM outbox f JOIN events e ON e.position = f.position
		WHERE ` + FailingRow + ` GROUP BY e.tenant, e.stream_id)
	SELECT e.position FROM events e ` + outboxRowOf + `
	WHERE e.position > $1 AND e.position <= $2 AND ` + Unsettled + `
	AND NOT EXISTS (SELECT 1 FROM failing t WHERE t.tenant = e.tenant AND t.stream_id = e.stream_id AND t.position <= e.position)
	ORDER BY e.position LIMIT 1`

// advanceOutbox moves W over the settled events above it, then C over
// the events above max(W, C) that are settled or wait behind a failed row
// of their stream: each by at most outboxStep positions, never past the
// newest event. Every method that settles or fails rows runs it last, in
// the writer's transaction, so W never passes an event that is not
// settled; the head row keeps every position it reads committed.
func advanceOutbox(ctx context.Context, q driver.Querier) error {
	var w, c, head int64
	err := q.QueryRowContext(ctx, `SELECT settled, scanned, COALESCE((SELECT max(position) FROM events), 0)
		FROM outbox_watermark FOR UPDATE`).Scan(&w, &c, &head)
	if err != nil {
		return fmt.Errorf("read the outbox watermark: %w", err)
	}
	stop := func(query string, from int64) (int64, error) {
		to := min(head, from+outboxStep)
		var p int64
		err := q.QueryRowContext(ctx, query, from, to).Scan(&p)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			return max(from, to), nil
		case err != nil:
			return 0, fmt.Errorf("move the outbox watermark: %w", err)
		}
		return p - 1, nil
	}
	nw, err := stop(AdvanceSettledQuery, w)
	if err != nil {
		return err
	}
	nc, err := stop(AdvanceScannedQuery, max(nw, c))
	if err != nil {
		return err
	}
	if nw == w && nc == c {
		return nil
	}
	if _, err := q.ExecContext(ctx, `UPDATE outbox_watermark SET settled = $1, scanned = $2`, nw, nc); err != nil {
		return fmt.Errorf("move the outbox watermark: %w", err)
	}
	return nil
}

// lowerOutboxCursor brings C below position p, whose row leaves the failed
// rows (re-queued, discarded or published): the events its stream kept
// waiting below C must be read again.
func lowerOutboxCursor(ctx context.Context, q driver.Querier, p int64) error {
	_, err := q.ExecContext(ctx, `UPDATE outbox_watermark SET scanned = LEAST(scanned, $1::bigint)`, p-1)
	return err
}

// SelectDeadLetters is sqlshared.SelectDeadLetters.
const SelectDeadLetters = sqlshared.SelectDeadLetters

// RequeueDeadLetters reads the dead letters, locking their rows, then
// clears them in one statement and lowers C below the first.
func (Exec) RequeueDeadLetters(ctx context.Context, q driver.Querier, tenant, eventID string) ([]driver.DeadLetter, error) {
	if err := lockWatermark(ctx, q); err != nil {
		return nil, err
	}
	ds, err := Exec{}.DeadLetterList(ctx, q, tenant, eventID, true)
	if err != nil || len(ds) == 0 {
		return nil, err
	}
	positions := make([]int64, len(ds))
	for i, d := range ds {
		positions[i] = d.Position
	}
	if _, err := q.ExecContext(ctx, `UPDATE outbox SET dead_at = NULL, attempts = 0, next_attempt_at = NULL,
		first_failed_at = NULL WHERE position = ANY($1::bigint[])`, positions); err != nil {
		return nil, err
	}
	// ds is in position order: lowering C below the first lowers it
	// below each.
	if err := lowerOutboxCursor(ctx, q, ds[0].Position); err != nil {
		return nil, err
	}
	if err := sqlshared.AddCounter(ctx, q, counterSQL, "requeued", int64(len(ds))); err != nil {
		return nil, err
	}
	return ds, nil
}

// DiscardDeadLetter reads the dead letter, locking its row, then marks
// it.
func (Exec) DiscardDeadLetter(ctx context.Context, q driver.Querier, now int64, tenant, eventID string) (driver.DeadLetter, bool, error) {
	if err := lockWatermark(ctx, q); err != nil {
		return driver.DeadLetter{}, false, err
	}
	d, err := sqlshared.ScanDeadLetter(q.QueryRowContext(ctx, SelectDeadLetters+` AND e.tenant = $1 AND e.event_id = $2 FOR UPDATE OF o`, tenant, eventID))
	if errors.Is(err, sql.ErrNoRows) {
		return driver.DeadLetter{}, false, nil
	}
	if err != nil {
		return d, false, err
	}
	if _, err := q.ExecContext(ctx, `UPDATE outbox SET discarded_at = $1 WHERE position = $2`, now, d.Position); err != nil {
		return d, true, err
	}
	if err := lowerOutboxCursor(ctx, q, d.Position); err != nil {
		return d, true, err
	}
	if err := sqlshared.AddCounter(ctx, q, counterSQL, "discarded", 1); err != nil {
		return d, true, err
	}
	return d, true, advanceOutbox(ctx, q)
}

// PendingCTE names the pending events, pending(position): those above
// the cursor max(W, C) that are not settled, and those in (W, max(W, C)]
// that are not settled, read through their streams' failed rows (every
// pending event there waits behind one). It visits the events above the
// cursor and the failed streams' events, not what was published below.
const PendingCTE = `WITH mark (w, c) AS MATERIALIZED (SELECT settled, GREATEST(settled, scanned) FROM outbox_watermark),
	failing (tenant, stream_id, version) AS MATERIALIZED (
		SELECT e.tenant, e.stream_id, min(e.version) FROM outbox f JOIN events e ON e.position = f.position
		WHERE ` + FailingRow + ` GROUP BY e.tenant, e.stream_id),
	pending (position) AS (
		SELECT e.position FROM events e LEFT JOIN outbox o ON o.position = e.position AND o.position > (SELECT c FROM mark)
		WHERE e.position > (SELECT c FROM mark) AND ` + Unsettled + `
		UNION ALL
		SELECT e.position FROM failing t JOIN events e ON e.tenant = t.tenant AND e.stream_id = t.stream_id AND e.version >= t.version
		LEFT JOIN outbox o ON o.position = e.position
		WHERE e.position > (SELECT w FROM mark) AND e.position <= (SELECT c FROM mark) AND ` + Unsettled + `)`

// OutboxStats runs its queries on the snapshot it is given.
func (Exec) OutboxStats(ctx context.Context, q driver.ReadQuerier) (driver.OutboxStats, error) {
	var st driver.OutboxStats
	var first sql.NullInt64
	if err := q.QueryRowContext(ctx, PendingCTE+` SELECT count(*), min(position) FROM pending`).Scan(&st.Pending, &first); err != nil {
		return st, err
	}
	if first.Valid {
		var oldest int64
		if err := q.QueryRowContext(ctx, `SELECT recorded_at FROM events WHERE position = $1`, first.Int64).Scan(&oldest); err != nil {
			return st, err
		}
		st.Oldest = time.Unix(0, oldest).UTC()
	}
	err := q.QueryRowContext(ctx, `SELECT count(*), count(DISTINCT (e.tenant, e.stream_id)) FROM outbox o JOIN events e ON e.position = o.position
		WHERE `+deadRow).Scan(&st.DeadLetters, &st.ParkedStreams)
	if err != nil {
		return st, err
	}
	if st.DeadLetters > 0 {
		err = q.QueryRowContext(ctx, `WITH parked (tenant, stream_id) AS MATERIALIZED (
				SELECT DISTINCT e.tenant, e.stream_id FROM outbox f JOIN events e ON e.position = f.position
				WHERE `+FailingRow+` AND f.dead_at IS NOT NULL)
			SELECT count(*) FROM parked p JOIN events e ON e.tenant = p.tenant AND e.stream_id = p.stream_id
			LEFT JOIN outbox o ON o.position = e.position WHERE `+Unsettled).Scan(&st.Parked)
		if err != nil {
			return st, err
		}
	}
	rows, err := q.QueryContext(ctx, `SELECT name, value FROM outbox_counters`)
	if err != nil {
		return st, err
	}
	defer rows.Close()
	st.Counters = make(map[string]int64, 5)
	for rows.Next() {
		var (
			name string
			v    int64
		)
		if err := rows.Scan(&name, &v); err != nil {
			return st, err
		}
		st.Counters[name] = v
	}
	return st, rows.Err()
}
