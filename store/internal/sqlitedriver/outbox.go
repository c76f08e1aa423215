package sqlitedriver

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/eventlite/eventlite/internal/timecol"
	"github.com/eventlite/eventlite/store/internal/driver"
	"github.com/eventlite/eventlite/store/internal/driver/sqlshared"
)

// The outbox's tables (migrations 0001, 0004 and 0015): outbox holds the
// ledger rows, outbox_watermark the one row of W (settled) and C
// (scanned), outbox_counters the totals. SQLite has one writer at a time,
// so the writer's transaction makes each write method atomic: the fence
// check, the ledger writes and the watermark move see no other writer.

// outboxColumns are the event's read columns on the events table aliased
// e, then the ledger row's own (o, left-joined: a pending event that never
// failed has no row). SelectAttrs names its columns unqualified: the
// outbox has none of them.
const outboxColumns = `e.position, e.tenant, e.stream_id, e.version, e.event_id, e.type, e.source, e.time,
	e.content_type, e.data, ` + SelectAttrs + `,
	COALESCE(o.attempts, 0), o.first_failed_at, o.last_error`

// Unsettled is sqlshared.Unsettled.
const Unsettled = sqlshared.Unsettled

// FailingRow is sqlshared.FailingRow.
const FailingRow = sqlshared.FailingRow

// heldStreams lists the streams the relay must hold back at time ?1 for a
// read above position ?2: those with a pending dead letter (parked), a
// pending row whose next attempt is still to come, or a pending row that
// failed before and lies at or below ?2 (the read would skip it and pass
// its stream's later rows). It reads the outbox_failing index only.
const heldStreams = `SELECT DISTINCT e.tenant, e.stream_id FROM outbox f JOIN events e ON e.position = f.position
	WHERE f.published_at IS NULL AND f.discarded_at IS NULL AND f.attempts > 0
	AND (f.dead_at IS NOT NULL OR f.next_attempt_at > ?1 OR f.position <= ?2)`

// readFrom is the position a relay's read starts above. ?1 now, ?2
// after. A read that goes on from a batch (after > 0) starts above
// after, never at or below W. A read from the start starts above the
// cursor, max(W, C), or just below the oldest failed row that is due for
// another attempt when that lies lower: its stream's waiting events are
// below C.
const readFrom = `(SELECT CASE WHEN ?2 > 0 THEN max(w.settled, ?2)
	ELSE max(w.settled, min(max(w.settled, w.scanned), COALESCE((SELECT min(f.position) - 1 FROM outbox f
		WHERE ` + FailingRow + ` AND f.dead_at IS NULL AND f.next_attempt_at <= ?1), w.scanned))) END
	FROM outbox_watermark w)`

// ReadOutboxQuery reads pending events above readFrom in position order,
// skipping held streams. ?1 now, ?2 after, ?3 limit. SQLite evaluates the
// start and the NOT IN list once per query, the list into a temporary
// index. Exported, as the other queries below, for the store's test of
// their plans.
const ReadOutboxQuery = `SELECT ` + outboxColumns + `
	FROM events e LEFT JOIN outbox o ON o.position = e.position
	WHERE e.position > ` + readFrom + ` AND ` + Unsettled + `
	AND (e.tenant, e.stream_id) NOT IN (` + heldStreams + `)
	ORDER BY e.position LIMIT ?3`

// ReadOutbox runs ReadOutboxQuery.
func (Exec) ReadOutbox(ctx context.Context, q driver.ReadQuerier, now, after int64, limit int) ([]driver.OutboxRow, error) {
	return sqlshared.ReadOutboxRows(ctx, q, ReadOutboxQuery, now, after, limit, newOutboxScanner().scan)
}

// outboxScanner scans rows of outboxColumns, reusing its destinations: a
// Scan with a new list of pointers into a new row allocates both on every
// row.
type outboxScanner struct {
	r        driver.OutboxRow
	t        timecol.Time
	attrs    []byte // SelectAttrs
	ff       sql.NullInt64
	lastErr  sql.NullString
	dest     []any
	attempts int64
}

func newOutboxScanner() *outboxScanner {
	s := &outboxScanner{}
	e := &s.r.Event
	s.dest = []any{&e.Position, &e.Tenant, &e.Stream, &e.StreamVersion, &e.ID, &e.Type, &e.Source, &s.t,
		&e.DataContentType, &e.Data, &s.attrs,
		&s.attempts, &s.ff, &s.lastErr}
	return s
}

func (s *outboxScanner) scan(rows *sql.Rows) (driver.OutboxRow, error) {
	s.r, s.attrs = driver.OutboxRow{}, nil
	if err := rows.Scan(s.dest...); err != nil {
		return driver.OutboxRow{}, err
	}
	r := s.r
	r.Event.Time, r.Event.TimeSet = s.t.T, s.t.T.IsZero()
	if s.attrs != nil {
		if err := SplitAttrs(s.attrs, &r.Event); err != nil {
			return r, fmt.Errorf("event at position %d: %w", r.Event.Position, err)
		}
	}
	r.Attempts = int(s.attempts)
	if s.ff.Valid {
		r.FirstFailedAt = time.Unix(0, s.ff.Int64).UTC()
	}
	r.LastError = s.lastErr.String
	return r, nil
}

// fenceHeld is CheckFence: the relay's writes check their fence first, in
// their transaction.
func fenceHeld(ctx context.Context, q driver.Querier, f driver.Fence) (bool, error) {
	return Exec{}.CheckFence(ctx, q, f)
}

// MarkPublished sends the batch as one JSON array of [position, sequence]
// pairs: one statement lowers C, one marks the rows.
func (Exec) MarkPublished(ctx context.Context, q driver.Querier, fence driver.Fence, now int64, rows []driver.Published) (int64, bool, error) {
	if held, err := fenceHeld(ctx, q, fence); err != nil || !held {
		return 0, held, err
	}
	b := make([]byte, 0, len(rows)*24)
	b = append(b, '[')
	for i, r := range rows {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '[')
		b = strconv.AppendInt(b, r.Position, 10)
		b = append(b, ',')
		b = strconv.AppendUint(b, r.BrokerSequence, 10)
		b = append(b, ']')
	}
	b = append(b, ']')
	// A row that had failed leaves the failed rows: its stream's waiting
	// events below the cursor must be read again.
	if _, err := q.ExecContext(ctx, `UPDATE outbox_watermark SET scanned = min(scanned, COALESCE(
		(SELECT min(f.position) - 1 FROM json_each(?1) AS j JOIN outbox f ON f.position = j.value ->> 0 WHERE `+FailingRow+`), scanned))`,
		string(b)); err != nil {
		return 0, true, err
	}
	res, err := q.ExecContext(ctx, MarkPublishedQuery, now, fence.Token, string(b))
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

// MarkPublishedQuery marks a batch: ?1 now, ?2 lease token, ?3 a JSON
// array of [position, sequence] pairs. One statement for the batch: it
// writes a row for each event that has none (most of them) and marks a
// failed row published; a row already published or discarded keeps its
// facts (the upsert's WHERE leaves it, and it is not counted). Positions
// without an event are skipped (the join).
const MarkPublishedQuery = `INSERT INTO outbox (position, published_at, published_token, broker_sequence)
	SELECT e.position, ?1, ?2, NULLIF(j.value ->> 1, 0) FROM json_each(?3) AS j JOIN events e ON e.position = j.value ->> 0 WHERE true
	ON CONFLICT (position) DO UPDATE SET published_at = excluded.published_at, published_token = excluded.published_token,
		broker_sequence = excluded.broker_sequence, next_attempt_at = NULL
	WHERE outbox.published_at IS NULL AND outbox.discarded_at IS NULL`

// RecordFailures upserts the failures in one statement per chunk of
// failuresChunk, their values bound as parameters: an event without a row
// gets one; a row no longer pending, or dead, is left as it is (the
// upsert's WHERE, and it is not counted). A statement per failure would
// cost a compilation of the upsert each.
func (Exec) RecordFailures(ctx context.Context, q driver.Querier, fence driver.Fence, now int64, failures []driver.Failure) (bool, error) {
	if held, err := fenceHeld(ctx, q, fence); err != nil || !held {
		return held, err
	}
	var n int64
	for start := 0; start < len(failures); start += failuresChunk {
		part := failures[start:min(len(failures), start+failuresChunk)]
		args := make([]any, 1, 1+3*len(part))
		args[0] = now
		var b strings.Builder
		b.WriteString(`INSERT INTO outbox (position, attempts, first_failed_at, last_failed_at, last_error, next_attempt_at)
		SELECT e.position, 1, ?1, ?1, v.column2, v.column3 FROM (VALUES `)
		for i, f := range part {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString("(?, ?, ?)")
			args = append(args, f.Position, f.Error, f.NextAttemptAt)
		}
		b.WriteString(`) AS v JOIN events e ON e.position = v.column1 WHERE true
		ON CONFLICT (position) DO UPDATE SET attempts = attempts + 1,
		first_failed_at = COALESCE(first_failed_at, ?1), last_failed_at = ?1, last_error = excluded.last_error,
		next_attempt_at = excluded.next_attempt_at
		WHERE published_at IS NULL AND discarded_at IS NULL AND dead_at IS NULL`)
		res, err := q.ExecContext(ctx, b.String(), args...)
		if err != nil {
			return true, err
		}
		k, _ := res.RowsAffected()
		n += k
	}
	if err := sqlshared.AddCounter(ctx, q, counterSQL, "retried", n); err != nil {
		return true, err
	}
	return true, Exec{}.AdvanceOutbox(ctx, q)
}

// failuresChunk bounds the failures of one statement: three parameters
// each, well under SQLite's limit of 32,766.
const failuresChunk = 1000

// MarkDead upserts one dead row per failure, as RecordFailures.
func (Exec) MarkDead(ctx context.Context, q driver.Querier, fence driver.Fence, now int64, failures []driver.Failure) (bool, error) {
	if held, err := fenceHeld(ctx, q, fence); err != nil || !held {
		return held, err
	}
	var n int64
	for _, f := range failures {
		res, err := q.ExecContext(ctx, `INSERT INTO outbox (position, attempts, first_failed_at, last_failed_at, last_error, dead_at)
			SELECT position, 1, ?1, ?1, ?2, ?1 FROM events WHERE position = ?3
			ON CONFLICT (position) DO UPDATE SET attempts = attempts + 1,
			first_failed_at = COALESCE(first_failed_at, ?1), last_failed_at = ?1, last_error = ?2,
			dead_at = ?1, next_attempt_at = NULL
			WHERE published_at IS NULL AND discarded_at IS NULL AND dead_at IS NULL`,
			now, f.Error, f.Position)
		if err != nil {
			return true, fmt.Errorf("dead-letter outbox row at position %d: %w", f.Position, err)
		}
		k, _ := res.RowsAffected()
		n += k
	}
	if err := sqlshared.AddCounter(ctx, q, counterSQL, "dead_lettered", n); err != nil {
		return true, err
	}
	return true, Exec{}.AdvanceOutbox(ctx, q)
}

// SelectDeadLetters is sqlshared.SelectDeadLetters.
const SelectDeadLetters = sqlshared.SelectDeadLetters
