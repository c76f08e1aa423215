package sqlitedriver

import (
	"context"
	"database/sql"
	sqldriver "database/sql/driver"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/internal/timecol"
	"github.com/eventlite/eventlite/store/internal/driver"
	"modernc.org/sqlite"
)

// InsertChunk is the most events one INSERT statement writes: a batch of
// 100 is four statements instead of a hundred. EventCols is the number of
// values each event binds.
const (
	InsertChunk = 32
	EventCols   = 12
)

// An append reads once, then writes only the events (and the streams row
// of a stream it creates or revives). StreamStateSQL is that read: the
// stream's lifecycle state (NULL: no streams row, the stream does not
// exist), its version (its newest event's, from the events' unique
// (tenant, stream_id, version) index) and the last position handed out:
// the highest in the log or the floor a scavenge or restore recorded,
// whichever is higher. The writer holds the write lock, so the next
// append sees this one's rows and positions stay consecutive and
// commit-ordered. Its last column says whether a scavenge removed events
// of the tenant: only then does InsertEvents look the ids up among the
// removed ones (a removed id is never used again).
const (
	StreamStateSQL = `SELECT (SELECT deleted FROM streams WHERE tenant = ?1 AND stream_id = ?2),
	COALESCE((SELECT MAX(version) FROM events WHERE tenant = ?1 AND stream_id = ?2), 0),
	max(COALESCE((SELECT MAX(position) FROM events), 0), COALESCE((SELECT position FROM position_floor WHERE one = 1), 0)),
	EXISTS (SELECT 1 FROM removed_event_ids WHERE tenant = ?1)`
	// StreamVersionStateSQL is StreamStateSQL without the last position,
	// for an append whose transaction handed out the last position
	// itself (the writer keeps it for the rest of its group).
	StreamVersionStateSQL = `SELECT (SELECT deleted FROM streams WHERE tenant = ?1 AND stream_id = ?2),
	COALESCE((SELECT MAX(version) FROM events WHERE tenant = ?1 AND stream_id = ?2), 0),
	EXISTS (SELECT 1 FROM removed_event_ids WHERE tenant = ?1)`
	CreateStreamSQL = `INSERT INTO streams (tenant, stream_id, created_at) VALUES (?, ?, ?)`
	// A soft-deleted stream counts as absent, and an append revives it.
	ReviveStreamSQL = `UPDATE streams SET deleted = 0 WHERE tenant = ? AND stream_id = ? AND deleted = 1`
	// StreamVersionSQL reads a stream's version and lifecycle state; no
	// row: the stream does not exist.
	StreamVersionSQL = `SELECT COALESCE((SELECT MAX(version) FROM events e WHERE e.tenant = s.tenant AND e.stream_id = s.stream_id), 0), deleted
	FROM streams s WHERE s.tenant = ? AND s.stream_id = ?`
	// EventByIDSQL is what a retried append compares.
	EventByIDSQL = `SELECT stream_id, version, type, data, attrs FROM events WHERE tenant = ? AND event_id = ?`
	// IDRemovedSQL finds an id among the ids of events a scavenge removed.
	IDRemovedSQL = `SELECT 1 FROM removed_event_ids WHERE tenant = ? AND event_id = ?`
)

// Shared is the set of an INSERT's columns that may differ from event to
// event but hold, in one statement, one value bound once (SharedVersion:
// consecutive versions, the first bound once). Binding was about a third
// of an insert's CPU time when each event bound all its values
// (BenchmarkInsertShared): modernc.org/sqlite looks each parameter's name
// up and copies every text and blob into C memory. A value common to the
// statement's events is bound once, not once per event, and an event of
// a store's append binds 4 values instead of 12: id, type, attributes
// and data.
type Shared uint8

const (
	// SharedVersion: the events' versions are consecutive.
	SharedVersion Shared = 1 << iota
	// SharedSource: one source.
	SharedSource
	// SharedTime: one time (the store's clock when the caller gave
	// none).
	SharedTime
	// SharedContentType: one data content type.
	SharedContentType

	// SharedAll is every column that may be shared.
	SharedAll = SharedVersion | SharedSource | SharedTime | SharedContentType
)

// insertCols are the events table's columns in its own order: SQLite
// inserts a VALUES row in the table's order as it is, and copies every
// value once more per row to reorder any other. always: one value for
// the whole statement (the position is consecutive by construction),
// else when bit is in the statement's Shared. step: later rows add their
// index to the first row's value.
var insertCols = [EventCols]struct {
	name   string
	always bool
	bit    Shared
	step   bool
}{
	{name: "position", always: true, step: true},
	{name: "tenant", always: true},
	{name: "stream_id", always: true},
	{name: "version", bit: SharedVersion, step: true},
	{name: "event_id"},
	{name: "type"},
	{name: "source", bit: SharedSource},
	{name: "time", bit: SharedTime},
	{name: "content_type", bit: SharedContentType},
	{name: "attrs"},
	{name: "recorded_at", always: true},
	{name: "data"},
}

// sharedCol reports whether column c holds one value in a statement
// sharing s.
func sharedCol(c int, s Shared) bool { return insertCols[c].always || insertCols[c].bit&s != 0 }

// InsertEventsSQL is the INSERT of k events, positions given, sharing s.
// The first row binds all EventCols values, in column order, with
// anonymous parameters: parameter c+1 is column c of the first event.
// Every later row names the shared ones by number, as ?N or (?N + i), and
// binds its own with anonymous parameters, which SQLite numbers after
// the highest so far: the values are bound as the first event's row,
// then each later event's own values (InsertEventsArgs). Only the shared
// parameters have names, the ones the driver looks up as such.
//
// SQLite computes (?N + i) for each row with one addition whose operands
// it loads once before the rows (EXPLAIN); a shared value costs each row
// the copy of a bound value that a row-bound one costs.
func InsertEventsSQL(k int, s Shared) string {
	var b strings.Builder
	b.WriteString("INSERT INTO events (")
	for c := range insertCols {
		if c > 0 {
			b.WriteString(", ")
		}
		b.WriteString(insertCols[c].name)
	}
	b.WriteString(") VALUES (?" + strings.Repeat(", ?", EventCols-1) + ")")
	for i := 1; i < k; i++ {
		b.WriteString(", (")
		for c := range insertCols {
			if c > 0 {
				b.WriteString(", ")
			}
			switch {
			case !sharedCol(c, s):
				b.WriteString("?")
			case insertCols[c].step:
				fmt.Fprintf(&b, "(?%d + %d)", c+1, i)
			default:
				fmt.Fprintf(&b, "?%d", c+1)
			}
		}
		b.WriteString(")")
	}
	return b.String()
}

// InsertEventsArgs is how many values InsertEventsSQL(k, s) binds.
func InsertEventsArgs(k int, s Shared) int {
	own := 0
	for c := range insertCols {
		if !sharedCol(c, s) {
			own++
		}
	}
	return EventCols + (k-1)*own
}

// chunkShared is what the events of one statement share.
func chunkShared(chunk []envelope.Event) Shared {
	if len(chunk) == 1 {
		return 0 // one statement for one event, whatever it shares
	}
	s := SharedAll
	e0 := &chunk[0]
	for i := 1; i < len(chunk); i++ {
		e := &chunk[i]
		if e.StreamVersion != e0.StreamVersion+int64(i) {
			s &^= SharedVersion
		}
		if e.Source != e0.Source {
			s &^= SharedSource
		}
		// The same instant is the same column value (timecol.Value),
		// whatever the location.
		if !e.Time.Equal(e0.Time) {
			s &^= SharedTime
		}
		if e.DataContentType != e0.DataContentType {
			s &^= SharedContentType
		}
	}
	return s
}

// writer is the SQLite Writer. The transaction statements are prepared
// too: an unprepared SAVEPOINT and RELEASE cost 2.8 us a request against
// 0.7 us prepared, on the writer's critical path.
//
// The two statements every append runs, the stream's state and the
// insert, are prepared on the driver's own connection (sql.Conn.Raw) and
// run there with arguments and results in buffers the writer keeps:
// database/sql's own bookkeeping around a statement (its locks, an
// argument slice and a Rows per call, converting every value) cost more
// than SQLite's work for a one-event append. The values bound are the
// ones database/sql would pass (int64, string, []byte, nil).
type writer struct {
	conn         *sql.Conn
	streamState  sqldriver.Stmt
	streamVer    sqldriver.Stmt
	createStream *sql.Stmt
	reviveStream *sql.Stmt
	eventByID    *sql.Stmt
	idRemoved    *sql.Stmt
	// removedIDs is StreamState's last answer: a scavenge removed events
	// of the tenant, so InsertEvents checks the ids it writes against
	// theirs. The store calls StreamState before InsertEvents in the
	// same transaction.
	removedIDs bool
	// insertEvents[s][k-1] inserts k events sharing s, prepared when
	// first needed (insertStmt): the few shapes an application's
	// batches have, of the 16 x InsertChunk possible.
	insertEvents [SharedAll + 1][InsertChunk]sqldriver.Stmt

	begin, commit                  *sql.Stmt
	savepoint, release, rollbackTo *sql.Stmt
	// args is the buffer of the driver-level statements' values, dest
	// of their results, kept between appends.
	args []sqldriver.NamedValue
	dest [4]sqldriver.Value

	// caller: the statements compiled now are a caller's (CallerSQL
	// until CallerSQLDone);
	// refused is the transaction control the authorizer refused among
	// them. Both are used on the writer's goroutine only, the one that
	// compiles (the authorizer runs inside the compile).
	caller  bool
	refused string

	// cache answers StreamState across transactions (statecache.go).
	cache stateCache
	// tags holds the tag index's statements (tags.go).
	tags tagWriter
}

// PrepareWriter prepares the append path on conn.
func (Exec) PrepareWriter(ctx context.Context, conn *sql.Conn) (driver.Writer, error) {
	w := &writer{conn: conn}
	// First: installing an authorizer expires the connection's prepared
	// statements.
	err := conn.Raw(func(dc any) error {
		a, ok := dc.(sqlite.AuthorizerRegisterer)
		if !ok {
			return fmt.Errorf("sqlitedriver: %T has no authorizer", dc)
		}
		return a.RegisterAuthorizer(w.authorize)
	})
	prep := func(q string) *sql.Stmt {
		if err != nil {
			return nil
		}
		var st *sql.Stmt
		st, err = conn.PrepareContext(ctx, q)
		return st
	}
	if err == nil {
		w.streamState, err = w.prepareRaw(ctx, StreamStateSQL)
	}
	if err == nil {
		w.streamVer, err = w.prepareRaw(ctx, StreamVersionStateSQL)
	}
	w.createStream = prep(CreateStreamSQL)
	w.reviveStream = prep(ReviveStreamSQL)
	w.eventByID = prep(EventByIDSQL)
	w.idRemoved = prep(IDRemovedSQL)
	w.begin = prep(`BEGIN IMMEDIATE`)
	w.commit = prep(`COMMIT`)
	w.savepoint = prep(`SAVEPOINT a`)
	w.release = prep(`RELEASE a`)
	w.rollbackTo = prep(`ROLLBACK TO a`)
	if err == nil {
		_, err = w.insertStmt(ctx, 1, 0)
	}
	if err != nil {
		_ = w.Close()
		return nil, err
	}
	return w, nil
}

// prepareRaw prepares q on the driver's connection.
func (w *writer) prepareRaw(ctx context.Context, q string) (st sqldriver.Stmt, err error) {
	rerr := w.conn.Raw(func(dc any) error {
		c, ok := dc.(sqldriver.ConnPrepareContext)
		if !ok {
			return fmt.Errorf("sqlitedriver: %T cannot prepare with a context", dc)
		}
		st, err = c.PrepareContext(ctx, q)
		return nil
	})
	if rerr != nil {
		return nil, rerr
	}
	return st, err
}

// execRaw runs st on the driver's connection with w.args.
func (w *writer) execRaw(ctx context.Context, st sqldriver.Stmt) error {
	return w.conn.Raw(func(any) error {
		_, err := st.(sqldriver.StmtExecContext).ExecContext(ctx, w.args)
		return err
	})
}

// queryRowRaw runs st on the driver's connection with w.args and reads
// its first row into w.dest[:n].
func (w *writer) queryRowRaw(ctx context.Context, st sqldriver.Stmt, n int) error {
	return w.conn.Raw(func(any) error {
		rows, err := st.(sqldriver.StmtQueryContext).QueryContext(ctx, w.args)
		if err != nil {
			return err
		}
		err = rows.Next(w.dest[:n])
		if cerr := rows.Close(); err == nil {
			err = cerr
		}
		if errors.Is(err, io.EOF) {
			err = sql.ErrNoRows
		}
		return err
	})
}

// insertStmt returns the statement inserting k events (1 <= k <=
// InsertChunk) sharing s, preparing it on first use.
func (w *writer) insertStmt(ctx context.Context, k int, s Shared) (sqldriver.Stmt, error) {
	if st := w.insertEvents[s][k-1]; st != nil {
		return st, nil
	}
	st, err := w.prepareRaw(ctx, InsertEventsSQL(k, s))
	if err != nil {
		return nil, &driver.OpError{Op: fmt.Sprintf("prepare insert of %d events", k), Err: err}
	}
	w.insertEvents[s][k-1] = st
	return st, nil
}

// Close closes every statement.
func (w *writer) Close() error {
	var errs []error
	for _, st := range []*sql.Stmt{w.createStream, w.reviveStream, w.eventByID, w.idRemoved,
		w.begin, w.commit, w.savepoint, w.release, w.rollbackTo} {
		if st != nil {
			errs = append(errs, st.Close())
		}
	}
	errs = append(errs, w.tags.close()...)
	raw := []sqldriver.Stmt{w.streamState, w.streamVer}
	for s := range w.insertEvents {
		raw = append(raw, w.insertEvents[s][:]...)
	}
	// The driver's connection may be gone already (a store whose
	// connection failed): its statements went with it.
	_ = w.conn.Raw(func(any) error {
		for _, st := range raw {
			if st != nil {
				errs = append(errs, st.Close())
			}
		}
		return nil
	})
	return errors.Join(errs...)
}

func run(ctx context.Context, st *sql.Stmt) error {
	_, err := st.ExecContext(ctx)
	return err
}

// beginTx runs BEGIN IMMEDIATE: the write lock from the start.
func (w *writer) beginTx(ctx context.Context) error { return run(ctx, w.begin) }

// commitTx runs COMMIT.
func (w *writer) commitTx(ctx context.Context) error { return run(ctx, w.commit) }

// rollbackTx runs ROLLBACK.
func (w *writer) rollbackTx(ctx context.Context) error {
	_, err := w.conn.ExecContext(ctx, "ROLLBACK")
	return err
}

// Savepoint opens the savepoint a (a request) or append_tx (an append
// in an Update closure).
func (w *writer) Savepoint(ctx context.Context, sp driver.Scope) error {
	if sp == driver.RequestScope {
		return run(ctx, w.savepoint)
	}
	_, err := w.conn.ExecContext(ctx, "SAVEPOINT append_tx")
	return err
}

// rollbackToScope rolls back to the savepoint.
func (w *writer) rollbackToScope(ctx context.Context, sp driver.Scope) error {
	if sp == driver.RequestScope {
		return run(ctx, w.rollbackTo)
	}
	_, err := w.conn.ExecContext(ctx, "ROLLBACK TO append_tx")
	return err
}

// Release releases the savepoint.
func (w *writer) Release(ctx context.Context, sp driver.Scope) error {
	if sp == driver.RequestScope {
		return run(ctx, w.release)
	}
	_, err := w.conn.ExecContext(ctx, "RELEASE append_tx")
	return err
}

// queryStreamState runs StreamStateSQL (StreamVersionStateSQL without
// head): one statement, under the write lock that BEGIN IMMEDIATE took.
func (w *writer) queryStreamState(ctx context.Context, tenant, stream string, head bool) (driver.StreamState, error) {
	w.args = append(w.args[:0], sqldriver.NamedValue{Ordinal: 1, Value: tenant}, sqldriver.NamedValue{Ordinal: 2, Value: stream})
	defer clear(w.args)
	defer clear(w.dest[:])
	var st driver.StreamState
	var err error
	n := 3 // deleted, version, removed ids
	if head {
		n = 4 // deleted, version, last position, removed ids
		err = w.queryRowRaw(ctx, w.streamState, n)
	} else {
		err = w.queryRowRaw(ctx, w.streamVer, n)
	}
	if err != nil {
		return driver.StreamState{}, err
	}
	var ok bool
	// deleted is NULL when there is no streams row; the others are
	// never NULL (COALESCE, max of two, EXISTS).
	if w.dest[0] != nil {
		if st.Deleted, ok = w.dest[0].(int64); !ok {
			return driver.StreamState{}, fmt.Errorf("sqlitedriver: stream state: deleted is %T", w.dest[0])
		}
		st.Row = true
	}
	if st.Version, ok = w.dest[1].(int64); !ok {
		return driver.StreamState{}, fmt.Errorf("sqlitedriver: stream state: version is %T", w.dest[1])
	}
	if head {
		if st.LastPosition, ok = w.dest[2].(int64); !ok {
			return driver.StreamState{}, fmt.Errorf("sqlitedriver: stream state: last position is %T", w.dest[2])
		}
	}
	removed, ok := w.dest[n-1].(int64)
	if !ok {
		return driver.StreamState{}, fmt.Errorf("sqlitedriver: stream state: removed ids is %T", w.dest[n-1])
	}
	w.removedIDs = removed != 0
	return st, nil
}

// InTransaction asks SQLite by starting a transaction: BEGIN fails
// inside one, and outside one it opens a deferred transaction, which
// holds no lock and is rolled back at once.
func (w *writer) InTransaction(ctx context.Context) (bool, error) {
	if _, err := w.conn.ExecContext(ctx, "BEGIN"); err != nil {
		if strings.Contains(err.Error(), "within a transaction") {
			return true, nil
		}
		return false, err
	}
	_, err := w.conn.ExecContext(ctx, "ROLLBACK")
	return false, err
}

// CallerSQL turns the authorizer's check on: see driver.Writer.
func (w *writer) CallerSQL(string) string {
	w.caller, w.refused = true, ""
	return ""
}

// CallerSQLDone turns it off and says what it refused.
func (w *writer) CallerSQLDone() string {
	refused := w.refused
	w.caller, w.refused = false, ""
	return refused
}

// authorize is the writer connection's authorizer: it refuses
// transaction control in a caller's statements and allows everything
// else. SQLite presents BEGIN, COMMIT, END and ROLLBACK as a transaction
// action (arg1: BEGIN, COMMIT or ROLLBACK), SAVEPOINT, RELEASE and
// ROLLBACK TO as a savepoint action (arg1: BEGIN, RELEASE or ROLLBACK;
// arg2: the name).
func (w *writer) authorize(action sqlite.AuthorizerActionCode, arg1, arg2, _, _ string) sqlite.AuthorizerReturnCode {
	if !w.caller {
		return sqlite.AuthorizerOK
	}
	switch action {
	case sqlite.AuthTransaction:
		w.refused = arg1
	case sqlite.AuthSavepoint:
		w.refused = map[string]string{"BEGIN": "SAVEPOINT", "RELEASE": "RELEASE", "ROLLBACK": "ROLLBACK TO"}[arg1]
		if w.refused == "" {
			w.refused = "SAVEPOINT"
		}
		if arg2 != "" {
			w.refused += " " + arg2
		}
	default:
		return sqlite.AuthorizerOK
	}
	return sqlite.AuthorizerDeny
}

// SingleStatementInsert: up to InsertChunk events are one INSERT, and
// SQLite backs out a failed statement's own rows (the events' unique
// indexes abort: ON CONFLICT ABORT; a removed id is refused before the
// statement runs), leaving
// the transaction open.
func (w *writer) SingleStatementInsert(n int) bool { return n >= 1 && n <= InsertChunk }

// insertBatch inserts up to InsertChunk events per INSERT: one more
// statement per further InsertChunk events.
func (w *writer) insertBatch(ctx context.Context, b driver.EventBatch) error {
	args := w.args[:0]
	defer func() {
		clear(args) // keep no event's data alive
		w.args = args[:0]
	}()
	for start := 0; start < len(b.Events); start += InsertChunk {
		chunk := b.Events[start:min(start+InsertChunk, len(b.Events))]
		if w.removedIDs {
			if err := w.refuseRemoved(ctx, b.Tenant, chunk, start); err != nil {
				return err
			}
		}
		shared := chunkShared(chunk)
		args = args[:0]
		add := func(v any) {
			args = append(args, sqldriver.NamedValue{Ordinal: len(args) + 1, Value: v})
		}
		for i := range chunk {
			e := &chunk[i]
			attrs, err := JoinAttrs(e)
			if err != nil {
				return &envelope.InvalidError{Index: start + i, Field: "extensions", Reason: err.Error()}
			}
			var attrsVal any // NULL when all four are empty
			if attrs != nil {
				attrsVal = attrs
			}
			data := e.Data
			if b.Sealed != nil && b.Sealed[start+i] != nil {
				data = b.Sealed[start+i] // never the plaintext
			}
			// The columns in insertCols order: every one for the first
			// event, each later event's own ones (InsertEventsSQL).
			own := func(c int) bool { return i == 0 || !sharedCol(c, shared) }
			if own(0) {
				add(b.FirstPosition + int64(start+i))
			}
			if own(1) {
				add(b.Tenant)
			}
			if own(2) {
				add(b.Stream)
			}
			if own(3) {
				add(e.StreamVersion)
			}
			add(e.ID)
			add(e.Type)
			if own(6) {
				add(e.Source)
			}
			if own(7) {
				add(timecol.Value(e.Time))
			}
			if own(8) {
				add(e.DataContentType)
			}
			add(attrsVal)
			if own(10) {
				add(b.RecordedAt)
			}
			add(data)
		}
		if want := InsertEventsArgs(len(chunk), shared); len(args) != want {
			return fmt.Errorf("sqlitedriver: insert of %d events sharing %#x: %d values, want %d", len(chunk), shared, len(args), want)
		}
		st, err := w.insertStmt(ctx, len(chunk), shared)
		if err != nil {
			return err
		}
		w.args = args
		if err := w.execRaw(ctx, st); err != nil {
			return &driver.OpError{Op: fmt.Sprintf("insert events %d..%d", start, start+len(chunk)-1), Err: err}
		}
	}
	return nil
}

// refuseRemoved refuses a chunk holding an id of an event a scavenge
// removed, as a unique violation: an event id is never used twice. It
// runs only while removed_event_ids holds ids, a lookup per event.
func (w *writer) refuseRemoved(ctx context.Context, tenant string, chunk []envelope.Event, start int) error {
	for i := range chunk {
		var one int
		err := w.idRemoved.QueryRowContext(ctx, tenant, chunk[i].ID).Scan(&one)
		if errors.Is(err, sql.ErrNoRows) {
			continue
		}
		op := fmt.Sprintf("insert events %d..%d", start, start+len(chunk)-1)
		if err != nil {
			return &driver.OpError{Op: op, Err: err}
		}
		return &driver.OpError{Op: op, Err: &RemovedIDError{Tenant: tenant, EventID: chunk[i].ID}}
	}
	return nil
}

// RemovedIDError is an insert refused because a scavenge removed the
// event that had the id. It is a unique violation (driver.Constraint).
type RemovedIDError struct{ Tenant, EventID string }

func (e *RemovedIDError) Error() string {
	return fmt.Sprintf("UNIQUE constraint failed: events.tenant, events.event_id (tenant %s, id %q: a scavenge removed the event)", e.Tenant, e.EventID)
}

// insertStreamRow inserts the streams row.
func (w *writer) insertStreamRow(ctx context.Context, tenant, stream string, now int64) error {
	_, err := w.createStream.ExecContext(ctx, tenant, stream, now)
	return err
}

// reviveStreamRow clears the soft delete.
func (w *writer) reviveStreamRow(ctx context.Context, tenant, stream string) error {
	_, err := w.reviveStream.ExecContext(ctx, tenant, stream)
	return err
}

// EventByID reads by the (tenant, event_id) index.
func (w *writer) EventByID(ctx context.Context, tenant, id string) (driver.StoredID, bool, error) {
	var ev driver.StoredID
	var attrs []byte
	err := w.eventByID.QueryRowContext(ctx, tenant, id).Scan(&ev.Stream, &ev.Version, &ev.Type, &ev.Data, &attrs)
	if errors.Is(err, sql.ErrNoRows) {
		return driver.StoredID{}, false, nil
	}
	if err != nil {
		return driver.StoredID{}, false, err
	}
	if attrs != nil {
		f, err := attrFields(string(attrs))
		if err != nil {
			return driver.StoredID{}, false, fmt.Errorf("event %q: %w", id, err)
		}
		if f[3] != "" {
			ev.Extensions = []byte(f[3])
		}
	}
	return ev, true, nil
}
