package sqlshared

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/eventlite/eventlite/store/internal/driver"
)

// The outbox's watermarks W (settled) and C (scanned), the pending
// events' CTE, the dead letters' requeue and discard, and the outbox's
// statistics. The relay's read and its marks are each engine's own (the
// relay's hot path: PostgreSQL sends a batch as arrays, SQLite as JSON or
// VALUES lists); they end with AdvanceOutbox, written here once.
//
// Every outbox write locks the watermark row first (LockWatermark): on
// PostgreSQL with FOR UPDATE, so that the write methods stay atomic if a
// caller ever runs them outside the writer; on SQLite the writer's write
// lock already holds it, and the read is a plain one.

// OutboxSQL is the outbox's shared statements as one engine takes them:
// a driver builds them once (NewOutboxSQL) and its Dialect hands them
// over (Dialect.Outbox).
type OutboxSQL struct {
	// AdvanceSettled finds the first event in (?, ?] that is not
	// settled: W stops just below it.
	AdvanceSettled string
	// AdvanceScanned finds the first event in (?, ?] that is neither
	// settled nor behind a failed row of its stream: C stops just below
	// it.
	AdvanceScanned string
	// PendingCTE names the pending events, pending(position): those
	// above the cursor max(W, C) that are not settled, and those in (W,
	// max(W, C)] that are not settled, read through their streams'
	// failed rows (every pending event there waits behind one). It
	// visits the events above the cursor and the failed streams' events,
	// not what was published below.
	PendingCTE string

	lock, read, move, lower, counter string
}

// NewOutboxSQL builds the outbox's shared statements in d's spelling,
// bound.
func NewOutboxSQL(d Dialect) *OutboxSQL {
	return &OutboxSQL{
		AdvanceSettled: d.Bind(`SELECT e.position FROM events e ` + d.OutboxRowOf() + `
	WHERE e.position > ? AND e.position <= ? AND ` + Unsettled + ` ORDER BY e.position LIMIT 1`),
		AdvanceScanned: d.Bind(`WITH failing (tenant, stream_id, position) AS MATERIALIZED (
		SELECT e.tenant, e.stream_id, min(f.position) FROM outbox f JOIN events e ON e.position = f.position
		WHERE ` + FailingRow + ` GROUP BY e.tenant, e.stream_id)
	SELECT e.position FROM events e ` + d.OutboxRowOf() + `
	WHERE e.position > ? AND e.position <= ? AND ` + Unsettled + `
	AND NOT EXISTS (SELECT 1 FROM failing t WHERE t.tenant = e.tenant AND t.stream_id = e.stream_id AND t.position <= e.position)
	ORDER BY e.position LIMIT 1`),
		PendingCTE: `WITH mark (w, c) AS MATERIALIZED (SELECT settled, ` + d.Greatest() + `(settled, scanned) FROM outbox_watermark),
	failing (tenant, stream_id, version) AS MATERIALIZED (
		SELECT e.tenant, e.stream_id, min(e.version) FROM outbox f JOIN events e ON e.position = f.position
		WHERE ` + FailingRow + ` GROUP BY e.tenant, e.stream_id),
	pending (position) AS (
		SELECT e.position FROM events e LEFT JOIN outbox o ON o.position = e.position AND o.position > (SELECT c FROM mark)
		WHERE e.position > (SELECT c FROM mark) AND ` + Unsettled + `
		UNION ALL
		SELECT e.position FROM failing t JOIN events e ON e.tenant = t.tenant AND e.stream_id = t.stream_id AND e.version >= t.version
		LEFT JOIN outbox o ON o.position = e.position
		WHERE e.position > (SELECT w FROM mark) AND e.position <= (SELECT c FROM mark) AND ` + Unsettled + `)`,
		lock:    `SELECT id FROM outbox_watermark` + d.ForUpdate(),
		read:    `SELECT settled, scanned, COALESCE((SELECT max(position) FROM events), 0) FROM outbox_watermark` + d.ForUpdate(),
		move:    d.Bind(`UPDATE outbox_watermark SET settled = ?, scanned = ?`),
		lower:   d.Bind(`UPDATE outbox_watermark SET scanned = ` + d.Least() + `(scanned, ` + d.Int64("?") + `)`),
		counter: d.Bind(CounterSQL),
	}
}

// outboxStep is the most positions one transaction moves W or C over.
// Once a stream parked for long is resolved they may pass every event
// published since; the relay's next batches move them on from there, so
// no transaction holds the writer for a scan of the whole log.
const outboxStep = 1 << 20

// LockWatermark locks the watermark row for the rest of the transaction:
// every outbox write takes it before it writes a ledger row.
func (x Exec[D]) LockWatermark(ctx context.Context, q driver.Querier) error {
	var id int64
	if err := q.QueryRowContext(ctx, x.dialect().Outbox().lock).Scan(&id); err != nil {
		return fmt.Errorf("lock the outbox watermark: %w", err)
	}
	return nil
}

// AdvanceOutbox moves W over the settled events above it, then C over
// the events above max(W, C) that are settled or wait behind a failed row
// of their stream: each by at most outboxStep positions, never past the
// newest event. Every method that settles or fails rows runs it last, in
// the writer's transaction, so W never passes an event that is not
// settled; the writer's serialization (PostgreSQL's head row, SQLite's
// write lock) keeps every position it reads committed.
func (x Exec[D]) AdvanceOutbox(ctx context.Context, q driver.Querier) error {
	s := x.dialect().Outbox()
	var w, c, head int64
	if err := q.QueryRowContext(ctx, s.read).Scan(&w, &c, &head); err != nil {
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
	nw, err := stop(s.AdvanceSettled, w)
	if err != nil {
		return err
	}
	nc, err := stop(s.AdvanceScanned, max(nw, c))
	if err != nil {
		return err
	}
	if nw == w && nc == c {
		return nil
	}
	if _, err := q.ExecContext(ctx, s.move, nw, nc); err != nil {
		return fmt.Errorf("move the outbox watermark: %w", err)
	}
	return nil
}

// lowerOutboxCursor brings C below position p, whose row leaves the failed
// rows (re-queued, discarded or published): the events its stream kept
// waiting below C must be read again.
func (x Exec[D]) lowerOutboxCursor(ctx context.Context, q driver.Querier, p int64) error {
	_, err := q.ExecContext(ctx, x.dialect().Outbox().lower, p-1)
	return err
}

// RequeueDeadLetters reads the dead letters, locking their rows, then
// clears each and lowers C below the first.
func (x Exec[D]) RequeueDeadLetters(ctx context.Context, q driver.Querier, tenant, eventID string) ([]driver.DeadLetter, error) {
	if err := x.LockWatermark(ctx, q); err != nil {
		return nil, err
	}
	ds, err := x.DeadLetterList(ctx, q, tenant, eventID, true)
	if err != nil || len(ds) == 0 {
		return nil, err
	}
	clearRow := x.bind(`UPDATE outbox SET dead_at = NULL, attempts = 0, next_attempt_at = NULL, first_failed_at = NULL WHERE position = ?`)
	for _, d := range ds {
		if _, err := q.ExecContext(ctx, clearRow, d.Position); err != nil {
			return nil, err
		}
	}
	// ds is in position order: lowering C below the first lowers it
	// below each.
	if err := x.lowerOutboxCursor(ctx, q, ds[0].Position); err != nil {
		return nil, err
	}
	if err := AddCounter(ctx, q, x.dialect().Outbox().counter, "requeued", int64(len(ds))); err != nil {
		return nil, err
	}
	return ds, nil
}

// DiscardDeadLetter reads the dead letter, locking its row, then marks
// it.
func (x Exec[D]) DiscardDeadLetter(ctx context.Context, q driver.Querier, now int64, tenant, eventID string) (driver.DeadLetter, bool, error) {
	if err := x.LockWatermark(ctx, q); err != nil {
		return driver.DeadLetter{}, false, err
	}
	d, err := ScanDeadLetter(q.QueryRowContext(ctx, x.bind(SelectDeadLetters+` AND e.tenant = ? AND e.event_id = ?`+x.dialect().ForUpdateOf("o")), tenant, eventID))
	if errors.Is(err, sql.ErrNoRows) {
		return driver.DeadLetter{}, false, nil
	}
	if err != nil {
		return d, false, err
	}
	if _, err := q.ExecContext(ctx, x.bind(`UPDATE outbox SET discarded_at = ? WHERE position = ?`), now, d.Position); err != nil {
		return d, true, err
	}
	if err := x.lowerOutboxCursor(ctx, q, d.Position); err != nil {
		return d, true, err
	}
	if err := AddCounter(ctx, q, x.dialect().Outbox().counter, "discarded", 1); err != nil {
		return d, true, err
	}
	return d, true, x.AdvanceOutbox(ctx, q)
}

// OutboxStats runs its queries on the snapshot it is given.
func (x Exec[D]) OutboxStats(ctx context.Context, q driver.ReadQuerier) (driver.OutboxStats, error) {
	var st driver.OutboxStats
	var first sql.NullInt64
	if err := q.QueryRowContext(ctx, x.dialect().Outbox().PendingCTE+` SELECT count(*), min(position) FROM pending`).Scan(&st.Pending, &first); err != nil {
		return st, err
	}
	if first.Valid {
		var oldest int64
		if err := q.QueryRowContext(ctx, x.bind(`SELECT recorded_at FROM events WHERE position = ?`), first.Int64).Scan(&oldest); err != nil {
			return st, err
		}
		st.Oldest = time.Unix(0, oldest).UTC()
	}
	err := q.QueryRowContext(ctx, `SELECT (SELECT count(*) FROM outbox o JOIN events e ON e.position = o.position WHERE `+deadRow+`),
		(SELECT count(*) FROM (SELECT DISTINCT e.tenant, e.stream_id FROM outbox o JOIN events e ON e.position = o.position
		WHERE `+deadRow+`) p)`).Scan(&st.DeadLetters, &st.ParkedStreams)
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

// ReadOutboxRows runs a driver's relay read, query (now, after, limit),
// and scans its rows with scan, the driver's scanner of its columns.
func ReadOutboxRows(ctx context.Context, q driver.ReadQuerier, query string, now, after int64, limit int, scan func(*sql.Rows) (driver.OutboxRow, error)) ([]driver.OutboxRow, error) {
	rows, err := q.QueryContext(ctx, query, now, after, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := make([]driver.OutboxRow, 0, min(limit, 1024))
	for rows.Next() {
		r, err := scan(rows)
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
