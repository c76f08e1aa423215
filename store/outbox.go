package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/internal/timecol"
)

// Outbox is the store's outbox and its dead letters, reached with
// Store.Outbox: the relay's reads, the operator's dead-letter actions and
// the outbox's counters. The relay's writes (tx.MarkPublished,
// tx.RecordFailure, tx.DeadLetter) run in its Update transaction.
type Outbox struct{ s *Store }

// Outbox returns the store's outbox.
func (s *Store) Outbox() *Outbox { return &Outbox{s: s} }

// The outbox is the relay's ledger (migrations 0001, 0004 and 0015): an
// append writes nothing to it. A row exists only for an event the relay
// settled (published, or discarded by an operator) or that failed
// (attempts, next attempt, dead letter). The watermark W
// (outbox_watermark.settled) says every event at or below it is settled;
// an event is pending when it lies above W and has no row, or a row
// neither published nor discarded. The relay reads pending events in
// position order, publishes them, and settles each batch in one fenced
// transaction (tx.MarkPublished, tx.RecordFailure, tx.DeadLetter), which
// moves W on over the settled positions. A dead letter parks its stream
// until an operator retries or discards it.
//
// The cursor C (outbox_watermark.scanned) keeps the relay's reads short
// while a stream is parked (W cannot pass its dead letter): every pending
// event in (W, max(W, C)] belongs to a stream with a failed row at or
// below it. A relay reads above C, and reaches such a stream's events
// again from the failed row's position once the row is due; an operator's
// retry or discard, or the publication of a row that had failed, lowers C
// below that row, so the stream's waiting events are read again.

// OutboxRow is a pending event and its outbox row's failure facts (all
// zero when it never failed: it has no row).
type OutboxRow struct {
	Event envelope.Event
	// Attempts counts the failed publish attempts so far (a broker that
	// was down counts none).
	Attempts int
	// FirstFailedAt is the time of the first failed attempt; zero when
	// the row never failed.
	FirstFailedAt time.Time
	// LastError is the error of the last failed attempt, "" when none.
	LastError string
}

// OutboxReadOptions selects pending events.
type OutboxReadOptions struct {
	// After reads events above this position (0: from the start, that is
	// from the relay's cursor and any failed row due again). A stream
	// with a row that failed before at or below After is left out: the
	// read cannot return that row, so the stream's later rows must wait.
	// (Pending rows at or below After that never failed are the caller's
	// to know about: a relay reads on from its last batch only when that
	// batch was published whole.)
	After int64
	// Limit caps the rows returned. Default 256.
	Limit int
	// Now is the relay's clock: a row whose next attempt is due after Now
	// holds back its stream. Default time.Now().
	Now time.Time
}

// outboxColumns are selectEvents' columns on the events table aliased e,
// then the outbox row's own (o, left-joined: a pending event that never
// failed has no row).
// selectAttrs names its columns unqualified: the outbox has none of them.
const outboxColumns = `e.position, e.tenant, e.stream_id, e.version, e.event_id, e.type, e.source, e.time,
	e.content_type, e.data, ` + selectAttrs + `,
	COALESCE(o.attempts, 0), o.first_failed_at, o.last_error`

// unsettled holds for an event e left-joined to its outbox row o when the
// event is neither published nor discarded (above the watermark, that is
// pending).
const unsettled = `(o.position IS NULL OR (o.published_at IS NULL AND o.discarded_at IS NULL))`

// failingRow holds for an outbox row f that failed and is still pending:
// the rows of the outbox_failing index.
const failingRow = `f.published_at IS NULL AND f.discarded_at IS NULL AND f.attempts > 0`

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
// below C (see the outbox's comment).
const readFrom = `(SELECT CASE WHEN ?2 > 0 THEN max(w.settled, ?2)
	ELSE max(w.settled, min(max(w.settled, w.scanned), COALESCE((SELECT min(f.position) - 1 FROM outbox f
		WHERE ` + failingRow + ` AND f.dead_at IS NULL AND f.next_attempt_at <= ?1), w.scanned))) END
	FROM outbox_watermark w)`

// readOutboxQuery reads pending events above readFrom in position order,
// skipping held streams. ?1 now, ?2 after, ?3 limit. SQLite evaluates the
// start and the NOT IN list once per query, the list into a temporary
// index.
const readOutboxQuery = `SELECT ` + outboxColumns + `
	FROM events e LEFT JOIN outbox o ON o.position = e.position
	WHERE e.position > ` + readFrom + ` AND ` + unsettled + `
	AND (e.tenant, e.stream_id) NOT IN (` + heldStreams + `)
	ORDER BY e.position LIMIT ?3`

// Read returns pending events with their outbox rows in position
// order: events neither published nor discarded, minus every event of a
// stream that is parked by a dead letter or whose failed row waits for
// its next attempt (so a stream is published in order). It reads through
// the read pool, outside any write transaction, from the relay's cursor
// on (see the outbox's comment): it does not visit the events published
// since a parked stream's dead letter.
func (o *Outbox) Read(ctx context.Context, opts OutboxReadOptions) ([]OutboxRow, error) {
	s := o.s
	if opts.Limit <= 0 {
		opts.Limit = 256
	}
	if opts.Now.IsZero() {
		opts.Now = time.Now()
	}
	rows, err := s.rdb.QueryContext(ctx, readOutboxQuery, opts.Now.UnixNano(), opts.After, opts.Limit)
	if err != nil {
		return nil, fmt.Errorf("read outbox: %w", mapErr(err))
	}
	defer rows.Close()
	out := make([]OutboxRow, 0, min(opts.Limit, 1024))
	sc := newOutboxScanner()
	for rows.Next() {
		r, err := sc.scan(rows)
		if err != nil {
			return nil, fmt.Errorf("read outbox: %w", err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read outbox: %w", mapErr(err))
	}
	rows.Close()
	for i := range out {
		if subject := erasureKeyOf(&out[i].Event); subject != "" {
			if err := s.keys.openEvent(ctx, s.rdb, true, &out[i].Event, subject); err != nil {
				return nil, fmt.Errorf("read outbox: %w", err)
			}
		}
	}
	return out, nil
}

// outboxScanner scans rows of outboxColumns, reusing its destinations.
type outboxScanner struct {
	r        OutboxRow
	t        timecol.Time
	attrs    []byte // selectAttrs
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

func (s *outboxScanner) scan(rows *sql.Rows) (OutboxRow, error) {
	s.r, s.attrs = OutboxRow{}, nil
	if err := rows.Scan(s.dest...); err != nil {
		return OutboxRow{}, err
	}
	r := s.r
	r.Event.Time, r.Event.TimeSet = s.t.T, s.t.T.IsZero()
	if s.attrs != nil {
		if err := splitAttrs(s.attrs, &r.Event); err != nil {
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

// NextAttempt returns the earliest time at which a row that failed
// is due for another attempt, and false when no row waits for one.
func (o *Outbox) NextAttempt(ctx context.Context) (time.Time, bool, error) {
	s := o.s
	var next sql.NullInt64
	err := s.rdb.QueryRowContext(ctx, `SELECT min(next_attempt_at) FROM outbox
		WHERE published_at IS NULL AND discarded_at IS NULL AND attempts > 0 AND dead_at IS NULL`).Scan(&next)
	if err != nil {
		return time.Time{}, false, fmt.Errorf("read outbox: %w", mapErr(err))
	}
	if !next.Valid {
		return time.Time{}, false, nil
	}
	return time.Unix(0, next.Int64), true, nil
}

// Published is one row the broker accepted.
type Published struct {
	Position int64
	// BrokerSequence is the broker's sequence for the message (JetStream's
	// stream sequence); 0 when the destination has none.
	BrokerSequence uint64
}

// MarkPublished marks rows published under the relay's lease, in an
// Update closure: it fails with ErrStaleFence, writing nothing, unless
// lease is current. A row already published or discarded is left as it
// is. It returns how many rows it marked.
func (tx *Tx) MarkPublished(ctx context.Context, lease Lease, rows []Published) (int, error) {
	if len(rows) == 0 {
		return 0, nil
	}
	if err := tx.CheckFence(ctx, lease); err != nil {
		return 0, err
	}
	s := tx.s
	// One statement for the batch: the positions and sequences travel as
	// a JSON array of [position, sequence] pairs.
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
	if _, err := s.wconn.ExecContext(ctx, `UPDATE outbox_watermark SET scanned = min(scanned, COALESCE(
		(SELECT min(f.position) - 1 FROM json_each(?1) AS j JOIN outbox f ON f.position = j.value ->> 0 WHERE `+failingRow+`), scanned))`,
		string(b)); err != nil {
		return 0, fmt.Errorf("mark outbox rows published: %w", mapErr(err))
	}
	res, err := s.wconn.ExecContext(ctx, markPublishedQuery, tx.now, lease.Token, string(b))
	if err != nil {
		return 0, fmt.Errorf("mark outbox rows published: %w", mapErr(err))
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, err
	}
	if err := s.addCounter(ctx, "published", n); err != nil {
		return 0, err
	}
	if err := s.advanceOutbox(ctx); err != nil {
		return 0, fmt.Errorf("mark outbox rows published: %w", err)
	}
	return int(n), nil
}

// markPublishedQuery marks a batch: ?1 now, ?2 lease token, ?3 a JSON
// array of [position, sequence] pairs. One statement for the batch: it
// writes a row for each event that has none (most of them) and marks a
// failed row published; a row already published or discarded keeps its
// facts (the upsert's WHERE leaves it, and it is not counted). Positions
// without an event are skipped (the join).
const markPublishedQuery = `INSERT INTO outbox (position, published_at, published_token, broker_sequence)
	SELECT e.position, ?1, ?2, NULLIF(j.value ->> 1, 0) FROM json_each(?3) AS j JOIN events e ON e.position = j.value ->> 0 WHERE true
	ON CONFLICT (position) DO UPDATE SET published_at = excluded.published_at, published_token = excluded.published_token,
		broker_sequence = excluded.broker_sequence, next_attempt_at = NULL
	WHERE outbox.published_at IS NULL AND outbox.discarded_at IS NULL`

// Failure is one failed publish attempt.
type Failure struct {
	Position int64
	// Error says what went wrong; it is kept on the row.
	Error string
	// NextAttemptAt is when tx.RecordFailure lets the row (and its stream)
	// be tried again. tx.DeadLetter ignores it.
	NextAttemptAt time.Time
}

// RecordFailure records a failed attempt on each row, under the relay's
// lease (ErrStaleFence otherwise, writing nothing): attempts grow by one,
// the error and times are kept, and the row and every later row of its
// stream wait until NextAttemptAt. Rows no longer pending are skipped.
func (tx *Tx) RecordFailure(ctx context.Context, lease Lease, failures []Failure) error {
	if len(failures) == 0 {
		return nil
	}
	if err := tx.CheckFence(ctx, lease); err != nil {
		return err
	}
	s := tx.s
	// An event without a row gets one; a row no longer pending, or dead,
	// is left as it is.
	st, err := s.wconn.PrepareContext(ctx, `INSERT INTO outbox (position, attempts, first_failed_at, last_failed_at, last_error, next_attempt_at)
		SELECT position, 1, ?1, ?1, ?2, ?3 FROM events WHERE position = ?4
		ON CONFLICT (position) DO UPDATE SET attempts = attempts + 1,
		first_failed_at = COALESCE(first_failed_at, ?1), last_failed_at = ?1, last_error = ?2, next_attempt_at = ?3
		WHERE published_at IS NULL AND discarded_at IS NULL AND dead_at IS NULL`)
	if err != nil {
		return fmt.Errorf("record outbox failures: %w", mapErr(err))
	}
	defer st.Close()
	var n int64
	for _, f := range failures {
		res, err := s.wconn.execStmt(ctx, st, tx.now, f.Error, f.NextAttemptAt.UnixNano(), f.Position)
		if err != nil {
			return fmt.Errorf("record outbox failure at position %d: %w", f.Position, mapErr(err))
		}
		k, _ := res.RowsAffected()
		n += k
	}
	if err := s.addCounter(ctx, "retried", n); err != nil {
		return err
	}
	return s.advanceOutbox(ctx)
}

// DeadLetter turns rows into dead letters, under the relay's lease
// (ErrStaleFence otherwise, writing nothing): the error, attempts (grown
// by one) and times are kept, and the row's stream is parked until an
// operator retries or discards it. Rows no longer pending are skipped.
func (tx *Tx) DeadLetter(ctx context.Context, lease Lease, failures []Failure) error {
	if len(failures) == 0 {
		return nil
	}
	if err := tx.CheckFence(ctx, lease); err != nil {
		return err
	}
	s := tx.s
	var n int64
	for _, f := range failures {
		res, err := s.wconn.ExecContext(ctx, `INSERT INTO outbox (position, attempts, first_failed_at, last_failed_at, last_error, dead_at)
			SELECT position, 1, ?1, ?1, ?2, ?1 FROM events WHERE position = ?3
			ON CONFLICT (position) DO UPDATE SET attempts = attempts + 1,
			first_failed_at = COALESCE(first_failed_at, ?1), last_failed_at = ?1, last_error = ?2,
			dead_at = ?1, next_attempt_at = NULL
			WHERE published_at IS NULL AND discarded_at IS NULL AND dead_at IS NULL`,
			tx.now, f.Error, f.Position)
		if err != nil {
			return fmt.Errorf("dead-letter outbox row at position %d: %w", f.Position, mapErr(err))
		}
		k, _ := res.RowsAffected()
		n += k
	}
	if err := s.addCounter(ctx, "dead_lettered", n); err != nil {
		return err
	}
	return s.advanceOutbox(ctx)
}

// outboxStep is the most positions one transaction moves W or C over.
// Once a stream parked for long is resolved they may pass every event
// published since; the relay's next batches move them on from there, so
// no transaction holds the writer for a scan of the whole log.
const outboxStep = 1 << 20

// advanceSettledQuery finds the first event in (?1, ?2] that is not
// settled: W stops just below it.
const advanceSettledQuery = `SELECT e.position FROM events e LEFT JOIN outbox o ON o.position = e.position
	WHERE e.position > ?1 AND e.position <= ?2 AND ` + unsettled + ` ORDER BY e.position LIMIT 1`

// advanceScannedQuery finds the first event in (?1, ?2] that is neither
// settled nor behind a failed row of its stream: C stops just below it.
const advanceScannedQuery = `WITH failing (tenant, stream_id, position) AS MATERIALIZED (
		SELECT e.tenant, e.stream_id, min(f.position) FROM outbox f JOIN events e ON e.position = f.position
		WHERE ` + failingRow + ` GROUP BY e.tenant, e.stream_id)
	SELECT e.position FROM events e LEFT JOIN outbox o ON o.position = e.position
	WHERE e.position > ?1 AND e.position <= ?2 AND ` + unsettled + `
	AND NOT EXISTS (SELECT 1 FROM failing t WHERE t.tenant = e.tenant AND t.stream_id = e.stream_id AND t.position <= e.position)
	ORDER BY e.position LIMIT 1`

// advanceOutbox moves W over the settled events above it, then C over
// the events above max(W, C) that are settled or wait behind a failed row
// of their stream: each by at most outboxStep positions, never past the
// newest event. It runs, on the writer, in every transaction that
// settles or fails rows, so W never passes an event that is not settled.
func (s *Store) advanceOutbox(ctx context.Context) error {
	var w, c, head int64
	err := s.wconn.QueryRowContext(ctx, `SELECT settled, scanned, COALESCE((SELECT max(position) FROM events), 0) FROM outbox_watermark`).Scan(&w, &c, &head)
	if err != nil {
		return fmt.Errorf("read the outbox watermark: %w", mapErr(err))
	}
	stop := func(q string, from int64) (int64, error) {
		to := min(head, from+outboxStep)
		var p int64
		err := s.wconn.QueryRowContext(ctx, q, from, to).Scan(&p)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			return max(from, to), nil
		case err != nil:
			return 0, fmt.Errorf("move the outbox watermark: %w", mapErr(err))
		}
		return p - 1, nil
	}
	nw, err := stop(advanceSettledQuery, w)
	if err != nil {
		return err
	}
	nc, err := stop(advanceScannedQuery, max(nw, c))
	if err != nil {
		return err
	}
	if nw == w && nc == c {
		return nil
	}
	if _, err := s.wconn.ExecContext(ctx, `UPDATE outbox_watermark SET settled = ?, scanned = ?`, nw, nc); err != nil {
		return fmt.Errorf("move the outbox watermark: %w", mapErr(err))
	}
	return nil
}

// lowerOutboxCursor brings C below position p, whose row leaves the failed
// rows (re-queued, discarded or published): the events its stream kept
// waiting below C must be read again.
func (s *Store) lowerOutboxCursor(ctx context.Context, p int64) error {
	_, err := s.wconn.ExecContext(ctx, `UPDATE outbox_watermark SET scanned = min(scanned, ?)`, p-1)
	return mapErr(err)
}

// addCounter moves an outbox counter inside the writer's transaction.
func (s *Store) addCounter(ctx context.Context, name string, n int64) error {
	if n == 0 {
		return nil
	}
	if _, err := s.wconn.ExecContext(ctx, `UPDATE outbox_counters SET value = value + ? WHERE name = ?`, n, name); err != nil {
		return fmt.Errorf("outbox counter %s: %w", name, mapErr(err))
	}
	return nil
}

// DeadLetter is an outbox row the relay gave up on. It parks its stream.
type DeadLetter struct {
	Tenant   string
	EventID  string
	Stream   string
	Version  int64
	Position int64
	Type     string
	// Attempts is the number of failed attempts.
	Attempts int
	// Error is the last attempt's error.
	Error       string
	FirstFailed time.Time
	LastFailed  time.Time
	DeadAt      time.Time
}

const selectDeadLetters = `SELECT e.tenant, e.event_id, e.stream_id, e.version, e.position, e.type,
	o.attempts, COALESCE(o.last_error, ''), COALESCE(o.first_failed_at, 0), COALESCE(o.last_failed_at, 0), o.dead_at
	FROM outbox o JOIN events e ON e.position = o.position
	WHERE o.published_at IS NULL AND o.discarded_at IS NULL AND o.attempts > 0 AND o.dead_at IS NOT NULL`

func scanDeadLetter(r scanner) (DeadLetter, error) {
	var (
		d            DeadLetter
		ff, lf, dead int64
	)
	if err := r.Scan(&d.Tenant, &d.EventID, &d.Stream, &d.Version, &d.Position, &d.Type,
		&d.Attempts, &d.Error, &ff, &lf, &dead); err != nil {
		return d, err
	}
	d.FirstFailed, d.LastFailed, d.DeadAt = time.Unix(0, ff).UTC(), time.Unix(0, lf).UTC(), time.Unix(0, dead).UTC()
	return d, nil
}

// DeadLetters lists a tenant's dead letters (every tenant's when tenant is
// "") in position order.
func (o *Outbox) DeadLetters(ctx context.Context, tenant string) ([]DeadLetter, error) {
	s := o.s
	q, args := selectDeadLetters, []any{}
	if tenant != "" {
		if err := envelope.ValidateTenant(tenant); err != nil {
			return nil, err
		}
		q += ` AND e.tenant = ?`
		args = append(args, tenant)
	}
	rows, err := s.rdb.QueryContext(ctx, q+` ORDER BY o.position`, args...)
	if err != nil {
		return nil, fmt.Errorf("list dead letters: %w", mapErr(err))
	}
	defer rows.Close()
	var out []DeadLetter
	for rows.Next() {
		d, err := scanDeadLetter(rows)
		if err != nil {
			return nil, fmt.Errorf("list dead letters: %w", err)
		}
		out = append(out, d)
	}
	return out, mapErr(rows.Err())
}

// DeadLetterNotFoundError: no dead letter has this event id in this
// tenant (the event may not exist, may have been published, or may not
// have failed). errors.Is(err, ErrNotFound) holds for it.
type DeadLetterNotFoundError struct {
	Tenant  string
	EventID string
}

func (e *DeadLetterNotFoundError) Error() string {
	return fmt.Sprintf("no dead letter with event id %q (tenant %s)", e.EventID, e.Tenant)
}

// Unwrap lets errors.Is(err, ErrNotFound) match.
func (e *DeadLetterNotFoundError) Unwrap() error { return ErrNotFound }

// deadLetterTx reads one dead letter on the writer's connection.
func (s *Store) deadLetterTx(ctx context.Context, tenant, eventID string) (DeadLetter, error) {
	d, err := scanDeadLetter(s.wconn.QueryRowContext(ctx, selectDeadLetters+` AND e.tenant = ? AND e.event_id = ?`, tenant, eventID))
	if errors.Is(err, sql.ErrNoRows) {
		return d, &DeadLetterNotFoundError{Tenant: tenant, EventID: eventID}
	}
	return d, mapErr(err)
}

// Outbox.RetryDeadLetter re-queues a dead letter with its event id unchanged (so
// the broker and consumers dedupe a copy that did arrive): its dead state
// and attempts are cleared and its stream is unparked; the relay publishes
// it, then the stream's waiting events, in order. An operator action, not
// fenced; it is logged. Unknown ids return a *DeadLetterNotFoundError.
func (o *Outbox) RetryDeadLetter(ctx context.Context, tenant, eventID string) (DeadLetter, error) {
	s := o.s
	if err := envelope.ValidateTenant(tenant); err != nil {
		return DeadLetter{}, err
	}
	var d DeadLetter
	err := s.Update(ctx, func(tx *Tx) error {
		var err error
		if d, err = s.deadLetterTx(ctx, tenant, eventID); err != nil {
			return err
		}
		return s.requeueTx(ctx, []DeadLetter{d})
	})
	if err != nil {
		return DeadLetter{}, fmt.Errorf("retry dead letter: %w", err)
	}
	s.log.Warn("dead letter re-queued by an operator", "tenant", d.Tenant, "event_id", d.EventID, "stream", d.Stream, "version", d.Version, "position", d.Position, "attempts", d.Attempts, "error", d.Error)
	return d, nil
}

// Outbox.RetryDeadLetters re-queues every dead letter of a tenant (every
// tenant's when tenant is "") as Outbox.RetryDeadLetter does, in one transaction,
// and returns them.
func (o *Outbox) RetryDeadLetters(ctx context.Context, tenant string) ([]DeadLetter, error) {
	s := o.s
	if tenant != "" {
		if err := envelope.ValidateTenant(tenant); err != nil {
			return nil, err
		}
	}
	var ds []DeadLetter
	err := s.Update(ctx, func(tx *Tx) error {
		q, args := selectDeadLetters, []any{}
		if tenant != "" {
			q += ` AND e.tenant = ?`
			args = append(args, tenant)
		}
		rows, err := s.wconn.QueryContext(ctx, q+` ORDER BY o.position`, args...)
		if err != nil {
			return mapErr(err)
		}
		for rows.Next() {
			d, err := scanDeadLetter(rows)
			if err != nil {
				rows.Close()
				return err
			}
			ds = append(ds, d)
		}
		if err := rows.Close(); err != nil {
			return err
		}
		if err := rows.Err(); err != nil {
			return mapErr(err)
		}
		return s.requeueTx(ctx, ds)
	})
	if err != nil {
		return nil, fmt.Errorf("retry dead letters: %w", err)
	}
	for _, d := range ds {
		s.log.Warn("dead letter re-queued by an operator", "tenant", d.Tenant, "event_id", d.EventID, "stream", d.Stream, "version", d.Version, "position", d.Position, "attempts", d.Attempts, "error", d.Error)
	}
	return ds, nil
}

func (s *Store) requeueTx(ctx context.Context, ds []DeadLetter) error {
	for _, d := range ds {
		_, err := s.wconn.ExecContext(ctx, `UPDATE outbox SET dead_at = NULL, attempts = 0, next_attempt_at = NULL,
			first_failed_at = NULL WHERE position = ?`, d.Position)
		if err != nil {
			return mapErr(err)
		}
		if err := s.lowerOutboxCursor(ctx, d.Position); err != nil {
			return err
		}
	}
	return s.addCounter(ctx, "requeued", int64(len(ds)))
}

// Outbox.DiscardDeadLetter gives a dead letter up for good: it will never be
// published, and its stream is unparked (the stream's later events go
// out). An explicit operator decision, not fenced; it is logged and the
// row keeps the time. Unknown ids return a *DeadLetterNotFoundError.
func (o *Outbox) DiscardDeadLetter(ctx context.Context, tenant, eventID string) (DeadLetter, error) {
	s := o.s
	if err := envelope.ValidateTenant(tenant); err != nil {
		return DeadLetter{}, err
	}
	var d DeadLetter
	err := s.Update(ctx, func(tx *Tx) error {
		var err error
		if d, err = s.deadLetterTx(ctx, tenant, eventID); err != nil {
			return err
		}
		if _, err := s.wconn.ExecContext(ctx, `UPDATE outbox SET discarded_at = ? WHERE position = ?`, tx.now, d.Position); err != nil {
			return mapErr(err)
		}
		if err := s.lowerOutboxCursor(ctx, d.Position); err != nil {
			return err
		}
		if err := s.addCounter(ctx, "discarded", 1); err != nil {
			return err
		}
		return s.advanceOutbox(ctx)
	})
	if err != nil {
		return DeadLetter{}, fmt.Errorf("discard dead letter: %w", err)
	}
	s.log.Warn("dead letter discarded by an operator: it will never be published", "tenant", d.Tenant, "event_id", d.EventID, "stream", d.Stream, "version", d.Version, "position", d.Position, "attempts", d.Attempts, "error", d.Error)
	return d, nil
}

// ParkedStream is a stream whose events wait behind a dead letter.
type ParkedStream struct {
	Tenant string
	Stream string
	// DeadLetter is the position of the stream's first dead letter.
	DeadLetter int64
	// Waiting counts the stream's pending rows, dead letters included.
	Waiting int64
}

// ParkedStreams lists the streams parked by a dead letter, every tenant's
// when tenant is "", in the order of their dead letters.
func (o *Outbox) ParkedStreams(ctx context.Context, tenant string) ([]ParkedStream, error) {
	s := o.s
	q := `SELECT e.tenant, e.stream_id, min(e.position), min(e.version) FROM outbox o JOIN events e ON e.position = o.position
		WHERE o.published_at IS NULL AND o.discarded_at IS NULL AND o.attempts > 0 AND o.dead_at IS NOT NULL`
	var args []any
	if tenant != "" {
		q += ` AND e.tenant = ?`
		args = append(args, tenant)
	}
	rows, err := s.rdb.QueryContext(ctx, q+` GROUP BY e.tenant, e.stream_id ORDER BY 3`, args...)
	if err != nil {
		return nil, fmt.Errorf("list parked streams: %w", mapErr(err))
	}
	type parked struct {
		ParkedStream
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
		return nil, mapErr(err)
	}
	out := make([]ParkedStream, 0, len(ps))
	for _, p := range ps {
		// The stream's events from its dead letter on, through the
		// stream's own index.
		err := s.rdb.QueryRowContext(ctx, `SELECT count(*) FROM events e LEFT JOIN outbox o ON o.position = e.position
			WHERE e.tenant = ? AND e.stream_id = ? AND e.version >= ? AND `+unsettled,
			p.Tenant, p.Stream, p.version).Scan(&p.Waiting)
		if err != nil {
			return nil, fmt.Errorf("list parked streams: %w", mapErr(err))
		}
		out = append(out, p.ParkedStream)
	}
	return out, nil
}

// pendingCTE names the pending events, pending(position): those above
// the cursor max(W, C) that are not settled, and those in (W, max(W, C)]
// that are not settled, read through their streams' failed rows (every
// pending event there waits behind one). It visits the events above the
// cursor and the failed streams' events, not what was published below.
const pendingCTE = `WITH mark (w, c) AS MATERIALIZED (SELECT settled, max(settled, scanned) FROM outbox_watermark),
	failing (tenant, stream_id, version) AS MATERIALIZED (
		SELECT e.tenant, e.stream_id, min(e.version) FROM outbox f JOIN events e ON e.position = f.position
		WHERE ` + failingRow + ` GROUP BY e.tenant, e.stream_id),
	pending (position) AS (
		SELECT e.position FROM events e LEFT JOIN outbox o ON o.position = e.position
		WHERE e.position > (SELECT c FROM mark) AND ` + unsettled + `
		UNION ALL
		SELECT e.position FROM failing t JOIN events e ON e.tenant = t.tenant AND e.stream_id = t.stream_id AND e.version >= t.version
		LEFT JOIN outbox o ON o.position = e.position
		WHERE e.position > (SELECT w FROM mark) AND e.position <= (SELECT c FROM mark) AND ` + unsettled + `)`

// OutboxStats describes the outbox.
type OutboxStats struct {
	// Pending counts the events not yet published nor discarded: the
	// outbox depth, dead letters and parked events included.
	Pending int64
	// Oldest is when the oldest pending row's event was recorded; zero
	// when nothing is pending. Lag is its age by the store's clock.
	Oldest time.Time
	Lag    time.Duration
	// DeadLetters counts the dead letters waiting for an operator;
	// ParkedStreams the streams they park; Parked the pending rows of
	// those streams (the dead letters included).
	DeadLetters   int64
	ParkedStreams int64
	Parked        int64
	// Totals since the outbox began: rows published, failed attempts
	// scheduled for a retry, dead letters re-queued by an operator, rows
	// dead-lettered, dead letters discarded.
	Published    int64
	Retried      int64
	Requeued     int64
	DeadLettered int64
	Discarded    int64
}

// Stats reads the outbox's depth, lag and totals. It visits the
// pending events (not the published ones).
func (o *Outbox) Stats(ctx context.Context) (OutboxStats, error) {
	s := o.s
	var st OutboxStats
	wrap := func(err error) error { return fmt.Errorf("outbox stats: %w", mapErr(err)) }
	// One read transaction, so the figures agree with each other.
	tx, err := s.rdb.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return st, wrap(err)
	}
	defer func() { _ = tx.Rollback() }()
	var first sql.NullInt64
	if err := tx.QueryRowContext(ctx, pendingCTE+` SELECT count(*), min(position) FROM pending`).Scan(&st.Pending, &first); err != nil {
		return st, wrap(err)
	}
	var oldest sql.NullInt64
	if first.Valid {
		if err := tx.QueryRowContext(ctx, `SELECT recorded_at FROM events WHERE position = ?`, first.Int64).Scan(&oldest); err != nil {
			return st, wrap(err)
		}
	}
	if oldest.Valid {
		st.Oldest = time.Unix(0, oldest.Int64).UTC()
		st.Lag = max(s.opts.Now().Sub(st.Oldest), 0)
	}
	err = tx.QueryRowContext(ctx, `SELECT count(*), count(DISTINCT e.tenant || x'00' || e.stream_id) FROM outbox o JOIN events e ON e.position = o.position
		WHERE o.published_at IS NULL AND o.discarded_at IS NULL AND o.attempts > 0 AND o.dead_at IS NOT NULL`).Scan(&st.DeadLetters, &st.ParkedStreams)
	if err != nil {
		return st, wrap(err)
	}
	if st.DeadLetters > 0 {
		err = tx.QueryRowContext(ctx, `WITH parked (tenant, stream_id) AS MATERIALIZED (
				SELECT DISTINCT e.tenant, e.stream_id FROM outbox f JOIN events e ON e.position = f.position
				WHERE f.published_at IS NULL AND f.discarded_at IS NULL AND f.attempts > 0 AND f.dead_at IS NOT NULL)
			SELECT count(*) FROM parked p JOIN events e ON e.tenant = p.tenant AND e.stream_id = p.stream_id
			LEFT JOIN outbox o ON o.position = e.position WHERE `+unsettled).Scan(&st.Parked)
		if err != nil {
			return st, wrap(err)
		}
	}
	rows, err := tx.QueryContext(ctx, `SELECT name, value FROM outbox_counters`)
	if err != nil {
		return st, wrap(err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			name string
			v    int64
		)
		if err := rows.Scan(&name, &v); err != nil {
			return st, wrap(err)
		}
		switch name {
		case "published":
			st.Published = v
		case "retried":
			st.Retried = v
		case "requeued":
			st.Requeued = v
		case "dead_lettered":
			st.DeadLettered = v
		case "discarded":
			st.Discarded = v
		}
	}
	if err := rows.Err(); err != nil {
		return st, wrap(err)
	}
	return st, nil
}

// OutboxEntry is one event's outbox state, whatever it is: its row as
// stored, or zero fields for a pending event that has none (it never
// failed).
type OutboxEntry struct {
	Position      int64
	Tenant        string
	EventID       string
	Stream        string
	Version       int64
	Attempts      int
	LastError     string
	NextAttemptAt time.Time // zero when none is scheduled
	FirstFailedAt time.Time
	LastFailedAt  time.Time
	DeadAt        time.Time // zero unless a dead letter
	DiscardedAt   time.Time // zero unless discarded
	PublishedAt   time.Time // zero until published
	RecordedAt    time.Time // when the event was committed
	// BrokerSequence is the broker's sequence (0 when none); PublishedToken
	// is the relay lease token under which the row was marked published.
	BrokerSequence uint64
	PublishedToken int64
}

// Entries returns the outbox state of up to limit events above position
// after, in position order, published or not: for reconciliation,
// diagnostics and tests. It reads every event it returns.
func (o *Outbox) Entries(ctx context.Context, after int64, limit int) ([]OutboxEntry, error) {
	s := o.s
	if limit <= 0 {
		limit = pageSize
	}
	rows, err := s.rdb.QueryContext(ctx, `SELECT e.position, e.tenant, e.event_id, e.stream_id, e.version, COALESCE(o.attempts, 0),
		COALESCE(o.last_error, ''), o.next_attempt_at, o.first_failed_at, o.last_failed_at, o.dead_at, o.discarded_at,
		o.published_at, COALESCE(o.broker_sequence, 0), COALESCE(o.published_token, 0), e.recorded_at
		FROM events e LEFT JOIN outbox o ON o.position = e.position WHERE e.position > ? ORDER BY e.position LIMIT ?`, after, limit)
	if err != nil {
		return nil, fmt.Errorf("read outbox entries: %w", mapErr(err))
	}
	defer rows.Close()
	var out []OutboxEntry
	for rows.Next() {
		var (
			x                             OutboxEntry
			next, ff, lf, dead, disc, pub sql.NullInt64
			seq, rec                      int64
		)
		if err := rows.Scan(&x.Position, &x.Tenant, &x.EventID, &x.Stream, &x.Version, &x.Attempts, &x.LastError,
			&next, &ff, &lf, &dead, &disc, &pub, &seq, &x.PublishedToken, &rec); err != nil {
			return nil, fmt.Errorf("read outbox entries: %w", err)
		}
		x.BrokerSequence, x.RecordedAt = uint64(seq), time.Unix(0, rec).UTC()
		x.NextAttemptAt, x.FirstFailedAt, x.LastFailedAt = nullTime(next), nullTime(ff), nullTime(lf)
		x.DeadAt, x.DiscardedAt, x.PublishedAt = nullTime(dead), nullTime(disc), nullTime(pub)
		out = append(out, x)
	}
	return out, mapErr(rows.Err())
}

func nullTime(n sql.NullInt64) time.Time {
	if !n.Valid {
		return time.Time{}
	}
	return time.Unix(0, n.Int64).UTC()
}
