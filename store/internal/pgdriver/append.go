package pgdriver

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/internal/timecol"
	"github.com/eventlite/eventlite/store/internal/driver"
)

// InsertChunk is the most events one INSERT statement writes. EventCols is
// the number of values each event binds.
const (
	InsertChunk = 32
	EventCols   = 15
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

// eventColTypes are the types of an event row's values, in
// InsertEventsSQL's column order: a VALUES list read by a SELECT needs
// them spelt out.
var eventColTypes = [EventCols]string{"bigint", "text", "text", "bigint", "text", "text", "text", "bigint",
	"text", "text", "bytea", "text", "text", "text", "bigint"}

// InsertEventsSQL is the INSERT of k events, positions given, which also
// moves the head row to the last of them ($1): one round trip.
//
// It never fails on an event id already stored or removed: PostgreSQL
// aborts the whole transaction at a failed statement, and the append
// reads on after a refused insert (is it a retry of a stored append?),
// in a transaction other requests may share. So the statement skips such
// rows (ON CONFLICT DO NOTHING, and no row whose id a scavenge removed,
// which the events_removed_id trigger would refuse), and InsertEvents
// tells a short count as the refusal it is.
func InsertEventsSQL(k int) string {
	var b strings.Builder
	b.WriteString(`WITH head AS (UPDATE log_head SET position = $1 WHERE position < $1)
	INSERT INTO events (position, tenant, stream_id, version, event_id, type, source, time,
		content_type, data_schema, data, correlation_id, causation_id, extensions, recorded_at)
	SELECT v.* FROM (VALUES `)
	n := 2
	for i := range k {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteByte('(')
		for c := range EventCols {
			if c > 0 {
				b.WriteString(", ")
			}
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
			b.WriteString("::")
			b.WriteString(eventColTypes[c])
			n++
		}
		b.WriteByte(')')
	}
	b.WriteString(`) AS v (position, tenant, stream_id, version, event_id, type, source, time,
		content_type, data_schema, data, correlation_id, causation_id, extensions, recorded_at)
	WHERE NOT EXISTS (SELECT 1 FROM removed_event_ids r WHERE r.tenant = v.tenant AND r.event_id = v.event_id)
	ON CONFLICT DO NOTHING`)
	return b.String()
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
	insertEvents [InsertChunk]*sql.Stmt
	args         []any
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
	w := &writer{conn: conn, begin: BeginSQL(schema, channel(current))}
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
	if err == nil {
		_, err = w.insertStmt(ctx, 1)
	}
	if err != nil {
		_ = w.Close()
		return nil, err
	}
	return w, nil
}

func (w *writer) insertStmt(ctx context.Context, k int) (*sql.Stmt, error) {
	if st := w.insertEvents[k-1]; st != nil {
		return st, nil
	}
	st, err := w.conn.PrepareContext(ctx, InsertEventsSQL(k))
	if err != nil {
		return nil, &driver.OpError{Op: fmt.Sprintf("prepare insert of %d events", k), Err: err}
	}
	w.insertEvents[k-1] = st
	return st, nil
}

// Close closes every statement.
func (w *writer) Close() error {
	var errs []error
	for _, st := range append([]*sql.Stmt{w.streamState, w.streamVer, w.createStream, w.reviveStream, w.eventByID}, w.insertEvents[:]...) {
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
	if _, err := w.conn.ExecContext(ctx, w.begin); err != nil {
		_, _ = w.conn.ExecContext(context.Background(), "ROLLBACK")
		return err
	}
	return nil
}

// Commit runs COMMIT. PostgreSQL answers a COMMIT of a transaction that
// failed with ROLLBACK and no error; pgx's stdlib adapter reports it as
// an error, so a failed transaction never reads as committed.
func (w *writer) Commit(ctx context.Context) error {
	_, err := w.conn.ExecContext(ctx, "COMMIT")
	return err
}

// Rollback runs ROLLBACK.
func (w *writer) Rollback(ctx context.Context) error {
	_, err := w.conn.ExecContext(ctx, "ROLLBACK")
	return err
}

func scopeName(sp driver.Scope) string {
	if sp == driver.RequestScope {
		return "a"
	}
	return "append_tx"
}

// Savepoint opens the savepoint a (a request) or append_tx (an append in
// an Update closure).
func (w *writer) Savepoint(ctx context.Context, sp driver.Scope) error {
	_, err := w.conn.ExecContext(ctx, "SAVEPOINT "+scopeName(sp))
	return err
}

// RollbackTo rolls back to the savepoint; it stays open.
func (w *writer) RollbackTo(ctx context.Context, sp driver.Scope) error {
	_, err := w.conn.ExecContext(ctx, "ROLLBACK TO SAVEPOINT "+scopeName(sp))
	return err
}

// Release releases the savepoint.
func (w *writer) Release(ctx context.Context, sp driver.Scope) error {
	_, err := w.conn.ExecContext(ctx, "RELEASE SAVEPOINT "+scopeName(sp))
	return err
}

// StreamState runs StreamStateSQL (StreamVersionStateSQL without head)
// under the head row lock.
func (w *writer) StreamState(ctx context.Context, tenant, stream string, head bool) (driver.StreamState, error) {
	var (
		st      driver.StreamState
		deleted sql.NullInt64
		err     error
	)
	if head {
		err = w.streamState.QueryRowContext(ctx, tenant, stream).Scan(&deleted, &st.Version, &st.LastPosition)
	} else {
		err = w.streamVer.QueryRowContext(ctx, tenant, stream).Scan(&deleted, &st.Version)
	}
	st.Row, st.Deleted = deleted.Valid, deleted.Int64
	return st, err
}

// InTransaction: true. A failed statement leaves the transaction open
// (aborted until ROLLBACK TO its savepoint); a lost session fails the
// commit.
func (w *writer) InTransaction(context.Context) (bool, error) { return true, nil }

// CallerSQL refuses a query that holds transaction control (txControl):
// see driver.Writer.
func (w *writer) CallerSQL(query string) string { return txControl(query) }

// Track: PostgreSQL reads the stream's state every time.
func (w *writer) Track(bool) {}

// CallerSQLDone: CallerSQL decided already.
func (w *writer) CallerSQLDone() string { return "" }

// SingleStatementInsert: never. PostgreSQL aborts the whole transaction
// at a failed statement, so every request of a group needs its savepoint
// before its first statement.
func (w *writer) SingleStatementInsert(int) bool { return false }

// InsertEvents inserts up to InsertChunk events per statement, each
// statement moving the head row to its last position.
func (w *writer) InsertEvents(ctx context.Context, b driver.EventBatch) error {
	args := w.args[:0]
	defer func() {
		clear(args)
		w.args = args[:0]
	}()
	for start := 0; start < len(b.Events); start += InsertChunk {
		chunk := b.Events[start:min(start+InsertChunk, len(b.Events))]
		args = append(args[:0], b.FirstPosition+int64(start+len(chunk)-1))
		for i := range chunk {
			e := &chunk[i]
			var ext any
			if len(e.Extensions) > 0 {
				x, err := json.Marshal(e.Extensions)
				if err != nil {
					return &envelope.InvalidError{Index: start + i, Field: "extensions", Reason: err.Error()}
				}
				ext = string(x)
			}
			var data any
			if e.Data != nil {
				data = e.Data
			}
			if b.Sealed != nil && b.Sealed[start+i] != nil {
				data = b.Sealed[start+i]
			}
			args = append(args, b.FirstPosition+int64(start+i), b.Tenant, b.Stream, e.StreamVersion, e.ID, e.Type, e.Source,
				timecol.Value(e.Time), e.DataContentType, e.DataSchema, data, e.CorrelationID, e.CausationID, ext, b.RecordedAt)
		}
		st, err := w.insertStmt(ctx, len(chunk))
		if err != nil {
			return err
		}
		op := fmt.Sprintf("insert events %d..%d", start, start+len(chunk)-1)
		res, err := st.ExecContext(ctx, args...)
		if err != nil {
			return &driver.OpError{Op: op, Err: err}
		}
		if n, err := res.RowsAffected(); err != nil || n != int64(len(chunk)) {
			if _, uerr := w.conn.ExecContext(ctx, UndoInsertSQL, b.FirstPosition); uerr != nil {
				return &driver.OpError{Op: op, Err: errors.Join(errIDTaken, uerr)}
			}
			return &driver.OpError{Op: op, Err: errIDTaken}
		}
	}
	return nil
}

// CreateStream inserts the streams row.
func (w *writer) CreateStream(ctx context.Context, tenant, stream string, now int64) error {
	_, err := w.createStream.ExecContext(ctx, tenant, stream, now)
	return err
}

// ReviveStream clears the soft delete.
func (w *writer) ReviveStream(ctx context.Context, tenant, stream string) error {
	_, err := w.reviveStream.ExecContext(ctx, tenant, stream)
	return err
}

// EventByID reads by the (tenant, event_id) index.
func (w *writer) EventByID(ctx context.Context, tenant, id string) (driver.StoredID, bool, error) {
	var ev driver.StoredID
	var ext sql.NullString
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
