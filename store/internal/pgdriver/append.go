package pgdriver

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/internal/timecol"
	"github.com/eventlite/eventlite/store/internal/driver"
)

// The append path's statements. StreamStateSQL reads, under the head row
// lock Begin took, the stream's lifecycle state (NULL: no streams row),
// its version (its newest event's, from the (tenant, stream_id, version)
// index) and the last position handed out: the head row, which every
// append moves (InsertEventsSQL) and which a scavenge or restore may have
// moved past the newest event. No other writer can move it before this
// transaction ends, so positions stay consecutive and commit-ordered.
const (
	StreamStateSQL = `SELECT (SELECT deleted FROM streams WHERE tenant = $1 AND stream_id = $2),
	COALESCE((SELECT max(version) FROM events WHERE tenant = $1 AND stream_id = $2), 0),
	(SELECT position FROM log_head)`
	// StreamVersionStateSQL is StreamStateSQL without the head, for an
	// append whose transaction moved the head itself (the writer keeps
	// it for the rest of its group).
	StreamVersionStateSQL = `SELECT (SELECT deleted FROM streams WHERE tenant = $1 AND stream_id = $2),
	COALESCE((SELECT max(version) FROM events WHERE tenant = $1 AND stream_id = $2), 0)`
	CreateStreamSQL = `INSERT INTO streams (tenant, stream_id, created_at) VALUES ($1, $2, $3)`
	// A soft-deleted stream counts as absent, and an append revives it.
	ReviveStreamSQL = `UPDATE streams SET deleted = 0 WHERE tenant = $1 AND stream_id = $2 AND deleted = 1`
	// EventByIDSQL is what a retried append compares.
	EventByIDSQL = `SELECT stream_id, version, type, data, extensions FROM events WHERE tenant = $1 AND event_id = $2`
	// BeginWriteSQL is a write transaction's first statement: it moves
	// the commit counter, which locks the head row until the transaction
	// ends, and notifies the schema's channel ($1), which PostgreSQL
	// delivers at the commit, to every store's change poller (Listen).
	// Another process's writer waits here (at most lock_timeout: then
	// Busy).
	BeginWriteSQL = `WITH h AS (UPDATE log_head SET commits = commits + 1 RETURNING commits)
	SELECT pg_notify($1, '') FROM h`
)

// BeginSQL is what Writer.Begin sends, in one round trip (a simple query
// of three statements, run in order, the first failure ending it): BEGIN
// ISOLATION LEVEL READ COMMITTED, SET LOCAL search_path to schema (as
// SHOW search_path gives it), and BeginWriteSQL with the channel given as
// a literal. Sent as three round trips, the statements held the head row
// one round trip longer per write transaction.
func BeginSQL(schema, channel string) string {
	return `BEGIN ISOLATION LEVEL READ COMMITTED; SET LOCAL search_path TO ` + schema + `; ` +
		strings.Replace(BeginWriteSQL, "$1", quoteLiteral(channel), 1)
}

// quoteLiteral quotes s as a string literal whatever
// standard_conforming_strings says: as an escape string (E'...') when s
// holds a backslash.
func quoteLiteral(s string) string {
	q := "'" + strings.ReplaceAll(s, "'", "''") + "'"
	if strings.Contains(s, `\`) {
		q = "E" + strings.ReplaceAll(q, `\`, `\\`)
	}
	return q
}

// InsertEventsSQL inserts a batch's events, positions given, in one
// statement whatever their number, and moves the head row to the last of
// them ($5): one round trip and one prepared statement. The events come
// as arrays, one per column ($6..$16, unnest), the values every event of
// the batch shares as scalars: the first position ($1; the others follow
// it), the tenant ($2), the stream ($3) and the recording time ($4).
//
// It never fails on an event id already stored or removed: PostgreSQL
// aborts the whole transaction at a failed statement, and the append
// reads on after a refused insert (is it a retry of a stored append?),
// in a transaction other requests may share. So the statement skips such
// rows (ON CONFLICT DO NOTHING, and no row whose id a scavenge removed,
// which the events_removed_id trigger would refuse), and InsertEvents
// tells a short count as the refusal it is.
const InsertEventsSQL = `WITH head AS (UPDATE log_head SET position = $5 WHERE position < $5)
	INSERT INTO events (position, tenant, stream_id, version, event_id, type, source, time,
		content_type, data_schema, data, correlation_id, causation_id, extensions, recorded_at)
	SELECT $1::bigint + u.i - 1, $2::text, $3::text, u.version, u.event_id, u.type, u.source, u.time,
		u.content_type, u.data_schema, u.data, u.correlation_id, u.causation_id, u.extensions, $4::bigint
	FROM unnest($6::bigint[], $7::text[], $8::text[], $9::text[], $10::bigint[], $11::text[], $12::text[],
		$13::bytea[], $14::text[], $15::text[], $16::text[]) WITH ORDINALITY
		AS u (version, event_id, type, source, time, content_type, data_schema, data, correlation_id, causation_id, extensions, i)
	WHERE NOT EXISTS (SELECT 1 FROM removed_event_ids r WHERE r.tenant = $2::text AND r.event_id = u.event_id)
	ON CONFLICT DO NOTHING`

// eventCols are a batch's columns, the arrays InsertEventsSQL unnests,
// kept by the writer from one batch to the next.
type eventCols struct {
	versions, times                                           []int64
	ids, types, sources, contentTypes, schemas, corrs, causes []string
	data                                                      [][]byte
	exts                                                      []*string
	extBuf                                                    []string
}

// fill sets the columns to b's events.
func (c *eventCols) fill(b driver.EventBatch) error {
	n := len(b.Events)
	c.versions, c.times = c.versions[:0], c.times[:0]
	c.ids, c.types, c.sources, c.contentTypes = c.ids[:0], c.types[:0], c.sources[:0], c.contentTypes[:0]
	c.schemas, c.corrs, c.causes = c.schemas[:0], c.corrs[:0], c.causes[:0]
	clear(c.data)
	c.data, c.exts = c.data[:0], c.exts[:0]
	c.extBuf = append(c.extBuf[:0], make([]string, n)...)
	for i := range b.Events {
		e := &b.Events[i]
		if !timecol.Nanos(e.Time) {
			return &envelope.InvalidError{Index: i, Field: "time", Reason: "outside the years 1678-2262, which this store's time column holds"}
		}
		var ext *string
		if len(e.Extensions) > 0 || len(e.Tags) > 0 {
			x, err := driver.ExtensionsJSON(e)
			if err != nil {
				return &envelope.InvalidError{Index: i, Field: "extensions", Reason: err.Error()}
			}
			c.extBuf[i] = string(x)
			ext = &c.extBuf[i]
		}
		data := e.Data
		if b.Sealed != nil && b.Sealed[i] != nil {
			data = b.Sealed[i]
		}
		c.versions = append(c.versions, e.StreamVersion)
		c.times = append(c.times, e.Time.UnixNano())
		c.ids = append(c.ids, e.ID)
		c.types = append(c.types, e.Type)
		c.sources = append(c.sources, e.Source)
		c.contentTypes = append(c.contentTypes, e.DataContentType)
		c.schemas = append(c.schemas, e.DataSchema)
		c.data = append(c.data, data)
		c.corrs = append(c.corrs, e.CorrelationID)
		c.causes = append(c.causes, e.CausationID)
		c.exts = append(c.exts, ext)
	}
	return nil
}

// UndoInsertSQL takes back a refused batch: the events at and above its
// first position ($1), all its own (the head row lock hands positions
// out), and the head row's move.
const UndoInsertSQL = `WITH head AS (UPDATE log_head SET position = $1 - 1)
	DELETE FROM events WHERE position >= $1`

// errIDTaken is a refused batch's error: a unique violation, as the
// SQLite driver's, so that the store tells it as a reused event id.
var errIDTaken = &pgconn.PgError{Severity: "ERROR", Code: "23505", ConstraintName: "events_tenant_event_id_key",
	Message: `duplicate key value violates unique constraint "events_tenant_event_id_key" (an event id of the batch is stored, or a scavenge removed it)`}

// writer is the PostgreSQL Writer.
type writer struct {
	conn         *sql.Conn
	begin        string // BeginSQL: BEGIN, SET LOCAL search_path and the head row's lock, one round trip
	streamState  *sql.Stmt
	streamVer    *sql.Stmt
	createStream *sql.Stmt
	reviveStream *sql.Stmt
	eventByID    *sql.Stmt
	insertEvents *sql.Stmt
	// insertTagRows is InsertTagsSQL, prepared on first use.
	insertTagRows *sql.Stmt
	cols          eventCols
	// schema and channel: BeginSQL's, for AppendGroup; group: its
	// batches' columns, kept from one group to the next.
	schema, channel string
	group           []eventCols
	// released: a request's savepoint was released (Release) and the
	// RELEASE not sent yet. It goes with the writer's next statement of
	// transaction control, in the same round trip: the next request's
	// SAVEPOINT, or the COMMIT (a ROLLBACK makes it moot). The store's
	// writer sends nothing else between them (runGroup).
	released bool
	// opened: a request's savepoint was opened (Savepoint) and the
	// SAVEPOINT not sent yet (see pending).
	opened bool
	// trackErr is the error of the flush Track(false) made.
	trackErr error
}

// PrepareWriter prepares the append path on conn.
func (Exec) PrepareWriter(ctx context.Context, conn *sql.Conn) (driver.Writer, error) {
	var schema string
	if err := conn.QueryRowContext(ctx, `SHOW search_path`).Scan(&schema); err != nil {
		return nil, err
	}
	var current string
	if err := conn.QueryRowContext(ctx, `SELECT current_schema()`).Scan(&current); err != nil {
		return nil, err
	}
	w := &writer{conn: conn, begin: BeginSQL(schema, channel(current)), schema: schema, channel: channel(current)}
	var err error
	prep := func(q string) *sql.Stmt {
		if err != nil {
			return nil
		}
		var st *sql.Stmt
		st, err = conn.PrepareContext(ctx, q)
		return st
	}
	w.streamState = prep(StreamStateSQL)
	w.streamVer = prep(StreamVersionStateSQL)
	w.createStream = prep(CreateStreamSQL)
	w.reviveStream = prep(ReviveStreamSQL)
	w.eventByID = prep(EventByIDSQL)
	w.insertEvents = prep(InsertEventsSQL)
	if err != nil {
		_ = w.Close()
		return nil, err
	}
	return w, nil
}

// Close closes every statement.
func (w *writer) Close() error {
	var errs []error
	for _, st := range []*sql.Stmt{w.streamState, w.streamVer, w.createStream, w.reviveStream, w.eventByID, w.insertEvents, w.insertTagRows} {
		if st != nil {
			errs = append(errs, st.Close())
		}
	}
	return errors.Join(errs...)
}

// Begin starts a READ COMMITTED transaction on the store's schema and
// locks the head row (BeginSQL): the write lock, from the start, in one
// round trip. When a statement of it fails (the head row's lock waited
// past lock_timeout) the transaction is open and aborted: roll it back.
func (w *writer) Begin(ctx context.Context) error {
	w.released, w.opened, w.trackErr = false, false, nil
	if _, err := w.conn.ExecContext(ctx, w.begin); err != nil {
		_, _ = w.conn.ExecContext(context.Background(), "ROLLBACK")
		return err
	}
	return nil
}

// Commit runs COMMIT. PostgreSQL answers a COMMIT of a transaction that
// failed with ROLLBACK and no error; pgx's stdlib adapter reports it as
// an error, so a failed transaction never reads as committed.
//
// A pending release goes first, in the same round trip; a request's
// savepoint never sent (its request wrote nothing) is dropped.
func (w *writer) Commit(ctx context.Context) error {
	w.opened = false
	_, err := w.conn.ExecContext(ctx, w.pending()+"COMMIT")
	return err
}

// The savepoint of a request (driver.RequestScope) is sent as late as
// the store's writer allows, in the round trip of the writer's next
// statement: its SAVEPOINT with the request's first statement (the
// stream state read: StreamState, or the closure's first statement,
// flushed by Track(false)), its RELEASE with the next request's
// SAVEPOINT or the COMMIT. Until then nothing was written in it, so
// nothing depends on it: a request that ends before its first statement
// needs no savepoint at all. Between the store's Savepoint, Release and
// RollbackTo calls of a request scope and the writer's other methods,
// the store sends nothing else on the connection (runGroup), and an
// Update closure's own statements follow Track(false).
//
// An append's savepoint in an Update closure (driver.AppendScope) is sent
// at once: the closure's own statements follow its release.

// pending returns the transaction control deferred so far (a release,
// then a savepoint), to send before the next statement, and forgets it.
func (w *writer) pending() string {
	var q string
	if w.released {
		q = "RELEASE SAVEPOINT " + scopeName(driver.RequestScope) + "; "
	}
	if w.opened {
		q += "SAVEPOINT " + scopeName(driver.RequestScope) + "; "
	}
	w.released, w.opened = false, false
	return q
}

// flush sends the deferred transaction control, if any, alone.
func (w *writer) flush(ctx context.Context) error {
	if err := w.trackErr; err != nil {
		w.trackErr = nil
		return err
	}
	if q := w.pending(); q != "" {
		if _, err := w.conn.ExecContext(ctx, q); err != nil {
			return err
		}
	}
	return nil
}

// Rollback runs ROLLBACK.
func (w *writer) Rollback(ctx context.Context) error {
	w.released, w.opened, w.trackErr = false, false, nil
	_, err := w.conn.ExecContext(ctx, "ROLLBACK")
	return err
}

func scopeName(sp driver.Scope) string {
	if sp == driver.RequestScope {
		return "a"
	}
	return "append_tx"
}

// Savepoint opens the savepoint a (a request: deferred, see above) or
// append_tx (an append in an Update closure).
func (w *writer) Savepoint(ctx context.Context, sp driver.Scope) error {
	if sp == driver.RequestScope && !w.opened {
		w.opened = true
		return nil
	}
	_, err := w.conn.ExecContext(ctx, w.pending()+"SAVEPOINT "+scopeName(sp))
	return err
}

// RollbackTo rolls back to the savepoint; it stays open. A request's
// savepoint not sent yet has nothing to undo, and stays deferred.
func (w *writer) RollbackTo(ctx context.Context, sp driver.Scope) error {
	if sp == driver.RequestScope && w.opened {
		return nil
	}
	_, err := w.conn.ExecContext(ctx, w.pending()+"ROLLBACK TO SAVEPOINT "+scopeName(sp))
	return err
}

// Release releases the savepoint: a request's waits for the writer's
// next statement of transaction control (see above), or is dropped when
// its SAVEPOINT was never sent.
func (w *writer) Release(ctx context.Context, sp driver.Scope) error {
	if sp == driver.RequestScope {
		if w.opened {
			w.opened = false
			return nil
		}
		if !w.released {
			w.released = true
			return nil
		}
	}
	_, err := w.conn.ExecContext(ctx, w.pending()+"RELEASE SAVEPOINT "+scopeName(sp))
	return err
}

// StreamState runs StreamStateSQL (StreamVersionStateSQL without head)
// under the head row lock, after the deferred transaction control in the
// same round trip (one pipelined batch).
func (w *writer) StreamState(ctx context.Context, tenant, stream string, head bool) (driver.StreamState, error) {
	var (
		st      driver.StreamState
		deleted sql.NullInt64
		err     error
	)
	if err := w.flushErr(); err != nil {
		return st, err
	}
	dest := []any{&deleted, &st.Version, &st.LastPosition}
	if !head {
		dest = dest[:2]
	}
	switch {
	case w.released || w.opened:
		q := StreamStateSQL
		if !head {
			q = StreamVersionStateSQL
		}
		var b pgx.Batch
		if w.released {
			b.Queue("RELEASE SAVEPOINT " + scopeName(driver.RequestScope))
		}
		if w.opened {
			b.Queue("SAVEPOINT " + scopeName(driver.RequestScope))
		}
		w.released, w.opened = false, false
		b.Queue(q, tenant, stream)
		err = w.conn.Raw(func(dc any) error {
			br := dc.(*stdlib.Conn).Conn().SendBatch(ctx, &b)
			var err error
			for range b.Len() - 1 {
				if _, err = br.Exec(); err != nil {
					break
				}
			}
			if err == nil {
				err = br.QueryRow().Scan(dest...)
			}
			return errors.Join(err, br.Close())
		})
	case head:
		err = w.streamState.QueryRowContext(ctx, tenant, stream).Scan(dest...)
	default:
		err = w.streamVer.QueryRowContext(ctx, tenant, stream).Scan(dest...)
	}
	st.Row, st.Deleted = deleted.Valid, deleted.Int64
	return st, err
}

// flushErr returns the error of a flush Track(false) made, once.
func (w *writer) flushErr() error {
	err := w.trackErr
	w.trackErr = nil
	return err
}

// InTransaction: true. A failed statement leaves the transaction open
// (aborted until ROLLBACK TO its savepoint); a lost session fails the
// commit.
func (w *writer) InTransaction(context.Context) (bool, error) { return true, nil }

// CallerSQL refuses a query that holds transaction control (txControl):
// see driver.Writer.
func (w *writer) CallerSQL(query string) string { return txControl(query) }

// Track: PostgreSQL reads the stream's state every time. Track(false)
// comes before an Update closure's own statements, which the writer does
// not see: the deferred transaction control is sent first. A failure is
// the next writer call's error; the transaction is then aborted, and the
// closure's statements fail too.
func (w *writer) Track(on bool) {
	if !on {
		if err := w.flush(context.Background()); err != nil {
			w.trackErr = err
		}
	}
}

// CallerSQLDone: CallerSQL decided already.
func (w *writer) CallerSQLDone() string { return "" }

// SingleStatementInsert: never. PostgreSQL aborts the whole transaction
// at a failed statement, so every request of a group needs its savepoint
// before its first statement.
func (w *writer) SingleStatementInsert(int) bool { return false }

// InsertEvents inserts the batch with one statement (InsertEventsSQL),
// which moves the head row to its last position.
func (w *writer) InsertEvents(ctx context.Context, b driver.EventBatch) error {
	if err := w.flush(ctx); err != nil {
		return err
	}
	c := &w.cols
	if err := c.fill(b); err != nil {
		return err
	}
	n := len(b.Events)
	op := fmt.Sprintf("insert events 0..%d", n-1)
	res, err := w.insertEvents.ExecContext(ctx, b.FirstPosition, b.Tenant, b.Stream, b.RecordedAt, b.FirstPosition+int64(n-1),
		c.versions, c.ids, c.types, c.sources, c.times, c.contentTypes, c.schemas, c.data, c.corrs, c.causes, c.exts)
	clear(c.data)
	if err != nil {
		return &driver.OpError{Op: op, Err: err}
	}
	if got, err := res.RowsAffected(); err != nil || got != int64(n) {
		if _, uerr := w.conn.ExecContext(ctx, UndoInsertSQL, b.FirstPosition); uerr != nil {
			return &driver.OpError{Op: op, Err: errors.Join(errIDTaken, uerr)}
		}
		return &driver.OpError{Op: op, Err: errIDTaken}
	}
	return w.insertTags(ctx, b)
}

// CreateStream inserts the streams row.
func (w *writer) CreateStream(ctx context.Context, tenant, stream string, now int64) error {
	if err := w.flush(ctx); err != nil {
		return err
	}
	_, err := w.createStream.ExecContext(ctx, tenant, stream, now)
	return err
}

// ReviveStream clears the soft delete.
func (w *writer) ReviveStream(ctx context.Context, tenant, stream string) error {
	if err := w.flush(ctx); err != nil {
		return err
	}
	_, err := w.reviveStream.ExecContext(ctx, tenant, stream)
	return err
}

// EventByID reads by the (tenant, event_id) index.
func (w *writer) EventByID(ctx context.Context, tenant, id string) (driver.StoredID, bool, error) {
	var ev driver.StoredID
	var ext sql.NullString
	if err := w.flush(ctx); err != nil {
		return ev, false, err
	}
	err := w.eventByID.QueryRowContext(ctx, tenant, id).Scan(&ev.Stream, &ev.Version, &ev.Type, &ev.Data, &ext)
	if errors.Is(err, sql.ErrNoRows) {
		return driver.StoredID{}, false, nil
	}
	if err != nil {
		return driver.StoredID{}, false, err
	}
	if ext.Valid {
		ev.Extensions = []byte(ext.String)
	}
	return ev, true, nil
}
