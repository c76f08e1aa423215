package pgdriver

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Expected is the stream version an append expects: Any, NoStream,
// StreamExists, or an exact version n >= 1.
type Expected = int64

const (
	// Any appends whatever the stream's version.
	Any Expected = -1
	// StreamExists appends only to a stream with at least one event.
	StreamExists Expected = -2
	// NoStream appends only when the stream has no event yet.
	NoStream Expected = 0
)

func expectedString(e Expected) string {
	switch e {
	case Any:
		return "any"
	case StreamExists:
		return "stream exists"
	case NoStream:
		return "no stream"
	}
	return strconv.FormatInt(e, 10)
}

// Event is one row to append, already encoded by the store: times in unix
// nanoseconds, Data nil for no data, Extensions nil for none.
type Event struct {
	ID            string
	Type          string
	Source        string
	Time          int64
	ContentType   string
	DataSchema    string
	Data          []byte
	CorrelationID string
	CausationID   string
	Extensions    *string
}

// Record is a stored event with its place in the log.
type Record struct {
	Position   int64
	Tenant     string
	Stream     string
	Version    int64
	RecordedAt int64
	Event
}

// AppendResult says where an append's events went.
type AppendResult struct {
	First, Last int64 // global positions; 0 and 0 for an empty append
	Version     int64 // the stream's version after the append
}

// WriteTx is a write transaction: READ COMMITTED, and its first statement
// locked the log's head row, so no other write transaction runs until it
// ends. Positions are handed out from the head in order. End it with
// Commit or Rollback.
type WriteTx struct {
	db    *DB
	conn  *pgxpool.Conn
	tx    pgx.Tx
	head  int64 // the last position handed out, this transaction's included
	ended bool
	bad   bool // a statement failed: PostgreSQL aborted the transaction
}

// BeginWrite opens a write transaction: it locks the head row (waiting at
// most BusyTimeout for the writer ahead, else ErrBusy), then sets
// search_path to the schema for this transaction only.
func (db *DB) BeginWrite(ctx context.Context) (*WriteTx, error) {
	c, err := db.acquire(ctx, "begin write")
	if err != nil {
		return nil, err
	}
	tx, err := c.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.ReadCommitted, AccessMode: pgx.ReadWrite})
	if err != nil {
		c.Release()
		return nil, classify("begin write", err)
	}
	w := &WriteTx{db: db, conn: c, tx: tx}
	b := &pgx.Batch{}
	b.Queue("SELECT position FROM " + db.quoted + ".log_head FOR UPDATE").QueryRow(func(r pgx.Row) error { return r.Scan(&w.head) })
	b.Queue("SET LOCAL search_path TO " + db.quoted)
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		w.abort()
		return nil, classify("lock the log head of schema "+db.schema, err)
	}
	return w, nil
}

// abort rolls back on a fresh context (the caller's may be the reason
// for the failure) and gives the connection back.
func (w *WriteTx) abort() {
	if w.ended {
		return
	}
	w.ended = true
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := w.tx.Rollback(ctx); err != nil {
		// The connection's state is unknown: do not reuse it.
		w.conn.Conn().Close(ctx) //nolint:errcheck // closing a broken connection
	}
	w.conn.Release()
}

// Head returns the last position handed out, this transaction's included.
func (w *WriteTx) Head() int64 { return w.head }

// Append appends events to the stream (tenant, stream) if its version is
// what expected says (*ConflictError otherwise, and the transaction stays
// usable). The events take positions head+1..head+n and versions
// after the stream's; the head row moves with them.
func (w *WriteTx) Append(ctx context.Context, tenant, stream string, expected Expected, events []Event) (AppendResult, error) {
	if w.ended || w.bad {
		return AppendResult{}, ErrTxDone
	}
	op := "append " + tenant + "/" + stream
	if expected < StreamExists {
		return AppendResult{}, &InputError{Op: op, Field: "expected", Reason: fmt.Sprintf("%d: use Any, NoStream, StreamExists or a version >= 1", expected)}
	}
	var cur int64
	err := w.tx.QueryRow(ctx, "SELECT version FROM streams WHERE tenant = $1 AND stream_id = $2", tenant, stream).Scan(&cur)
	if err != nil && err != pgx.ErrNoRows {
		w.bad = true
		return AppendResult{}, classify(op, err)
	}
	switch {
	case expected == Any:
	case expected == StreamExists && cur >= 1:
	case expected >= 0 && expected == cur:
	default:
		return AppendResult{}, &ConflictError{Tenant: tenant, Stream: stream, Expected: expected, Actual: cur}
	}
	n := int64(len(events))
	if n == 0 {
		return AppendResult{Version: cur}, nil
	}
	now := time.Now().UnixNano()
	cols := newEventColumns(events)
	first := w.head + 1
	b := &pgx.Batch{}
	b.Queue(insertEvents, first, tenant, stream, cur+1, now,
		cols.id, cols.typ, cols.source, cols.time, cols.contentType, cols.dataSchema,
		cols.data, cols.correlation, cols.causation, cols.extensions)
	b.Queue(upsertStream, tenant, stream, cur+n, now)
	b.Queue("UPDATE log_head SET position = $1", w.head+n)
	if err := w.tx.SendBatch(ctx, b).Close(); err != nil {
		w.bad = true
		return AppendResult{}, classify(op, err)
	}
	w.head += n
	return AppendResult{First: first, Last: w.head, Version: cur + n}, nil
}

// The events of one append as columns, for one INSERT over unnest.
type eventColumns struct {
	id, typ, source, contentType, dataSchema, correlation, causation []string
	time                                                             []int64
	data                                                             [][]byte
	extensions                                                       []*string
}

func newEventColumns(evs []Event) *eventColumns {
	c := &eventColumns{}
	for _, e := range evs {
		c.id = append(c.id, e.ID)
		c.typ = append(c.typ, e.Type)
		c.source = append(c.source, e.Source)
		c.time = append(c.time, e.Time)
		c.contentType = append(c.contentType, e.ContentType)
		c.dataSchema = append(c.dataSchema, e.DataSchema)
		c.data = append(c.data, e.Data)
		c.correlation = append(c.correlation, e.CorrelationID)
		c.causation = append(c.causation, e.CausationID)
		c.extensions = append(c.extensions, e.Extensions)
	}
	return c
}

// insertEvents numbers the rows of unnest from $1 (positions) and $4
// (versions), in the order given.
const insertEvents = `INSERT INTO events (position, tenant, stream_id, version, recorded_at,
    event_id, type, source, time, content_type, data_schema, data, correlation_id, causation_id, extensions)
SELECT $1::bigint + u.ord - 1, $2, $3, $4::bigint + u.ord - 1, $5,
    u.event_id, u.type, u.source, u.time, u.content_type, u.data_schema, u.data, u.correlation_id, u.causation_id, u.extensions
FROM unnest($6::text[], $7::text[], $8::text[], $9::bigint[], $10::text[], $11::text[], $12::bytea[], $13::text[], $14::text[], $15::text[])
    WITH ORDINALITY AS u (event_id, type, source, time, content_type, data_schema, data, correlation_id, causation_id, extensions, ord)
ORDER BY u.ord`

const upsertStream = `INSERT INTO streams (tenant, stream_id, version, created_at, updated_at)
VALUES ($1, $2, $3, $4, $4)
ON CONFLICT (tenant, stream_id) DO UPDATE SET version = EXCLUDED.version, updated_at = EXCLUDED.updated_at`

// Commit commits the transaction, which releases the head lock. A commit
// that fails leaves nothing written.
func (w *WriteTx) Commit(ctx context.Context) error {
	if w.ended {
		return ErrTxDone
	}
	if w.bad {
		w.abort()
		return ErrTxDone
	}
	err := w.tx.Commit(ctx)
	w.ended = true
	w.conn.Release()
	return classify("commit", err)
}

// Rollback ends the transaction without writing; the positions it took
// are handed out again. Rolling back an ended transaction does nothing.
func (w *WriteTx) Rollback() {
	w.abort()
}

// pid is the server process of the transaction's session.
func (w *WriteTx) pid() uint32 { return w.conn.Conn().PgConn().PID() }

// Append appends events to one stream in a write transaction of its own;
// see WriteTx.Append.
func (db *DB) Append(ctx context.Context, tenant, stream string, expected Expected, events []Event) (AppendResult, error) {
	w, err := db.BeginWrite(ctx)
	if err != nil {
		return AppendResult{}, err
	}
	res, err := w.Append(ctx, tenant, stream, expected, events)
	if err != nil {
		w.Rollback()
		return AppendResult{}, err
	}
	if err := w.Commit(ctx); err != nil {
		return AppendResult{}, err
	}
	return res, nil
}

// ReadAfter returns up to limit events with positions after position, in
// position order: what a follower reads next. Since positions become
// visible in commit order, a follower that goes on from the last position
// it read never skips an event.
func (db *DB) ReadAfter(ctx context.Context, position int64, limit int) ([]Record, error) {
	if limit <= 0 {
		return nil, &InputError{Op: fmt.Sprintf("read after %d", position), Field: "limit", Reason: fmt.Sprintf("%d: give a limit of at least 1", limit)}
	}
	var recs []Record
	err := db.readTx(ctx, "read after "+strconv.FormatInt(position, 10), func(b *pgx.Batch) {
		b.Queue(`SELECT position, tenant, stream_id, version, recorded_at, event_id, type, source, time,
    content_type, data_schema, data, correlation_id, causation_id, extensions
FROM `+db.quoted+`.events WHERE position > $1 ORDER BY position LIMIT $2`, position, limit).Query(func(rows pgx.Rows) error {
			for rows.Next() {
				var r Record
				if err := rows.Scan(&r.Position, &r.Tenant, &r.Stream, &r.Version, &r.RecordedAt, &r.ID, &r.Type,
					&r.Source, &r.Time, &r.ContentType, &r.DataSchema, &r.Data, &r.CorrelationID, &r.CausationID,
					&r.Extensions); err != nil {
					return err
				}
				recs = append(recs, r)
			}
			return rows.Err()
		})
	})
	return recs, err
}

// Head returns the last position handed out by a committed transaction.
func (db *DB) Head(ctx context.Context) (int64, error) {
	var h int64
	err := db.readTx(ctx, "read the log head", func(b *pgx.Batch) {
		b.Queue("SELECT position FROM " + db.quoted + ".log_head").QueryRow(func(r pgx.Row) error { return r.Scan(&h) })
	})
	return h, err
}

// readTx runs the statements queue adds in a read-only READ COMMITTED
// transaction with search_path set to the schema, in one round trip. pgx
// prepares every statement of a batch before the first runs, so they name
// their tables with the schema (db.quoted) rather than rely on search_path.
func (db *DB) readTx(ctx context.Context, op string, queue func(*pgx.Batch)) error {
	c, err := db.acquire(ctx, op)
	if err != nil {
		return err
	}
	defer c.Release()
	b := &pgx.Batch{}
	b.Queue("BEGIN ISOLATION LEVEL READ COMMITTED READ ONLY")
	b.Queue("SET LOCAL search_path TO " + db.quoted)
	queue(b)
	b.Queue("COMMIT")
	if err := c.SendBatch(ctx, b).Close(); err != nil {
		// A failed batch may leave the session inside the transaction.
		if !c.Conn().PgConn().IsClosed() && c.Conn().PgConn().TxStatus() != 'I' {
			rctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if _, rerr := c.Exec(rctx, "ROLLBACK"); rerr != nil {
				c.Conn().Close(rctx) //nolint:errcheck // closing a broken connection
			}
		}
		return classify(op, err)
	}
	return nil
}
