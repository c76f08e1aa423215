package store_test

// The raw baseline the store's benchmarks are measured against: the same
// file layout (the schema is read from the SQLite driver's internal/sqlitedriver/migrations/*.sql), the
// same pragmas as Store.dsn, database/sql prepared statements on one
// connection, BEGIN IMMEDIATE, and none of the store's work beyond the SQL
// (no envelope, no validation, no writer goroutine for serial appends).
// What is left is the least an event store on modernc.org/sqlite has to do
// per append: read the stream's version (its newest event's), insert the
// event (no outbox row: the relay reads events above its watermark), and
// a streams row for a new stream.

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	_ "modernc.org/sqlite"
)

const (
	rawSource      = "/bench"
	rawContentType = "application/json"
	// rawMaxBatch mirrors the store's default Options.MaxBatch.
	rawMaxBatch = 256
	// rawBusyTimeout and rawJournalSizeLimit mirror the store's defaults.
	rawBusyTimeout      = 5 * time.Second
	rawJournalSizeLimit = 64 << 20
)

// rawCtx has no Done channel, as the store's writer uses: modernc then
// spares a goroutine per statement.
var rawCtx = context.Background()

// rawEvent is what the baseline writes: an id, a type and JSON data.
type rawEvent struct {
	ID   string
	Type string
	Data []byte
}

// rawDSN builds the connection string the store would build for path
// (Store.dsn): the same pragmas, _txlock=immediate for the writer.
func rawDSN(path, synchronous string, write bool) string {
	p := strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(filepath.ToSlash(path))
	q := []string{
		fmt.Sprintf("_pragma=busy_timeout(%d)", rawBusyTimeout.Milliseconds()),
		"_pragma=synchronous(" + synchronous + ")",
		"_pragma=foreign_keys(1)",
		fmt.Sprintf("_pragma=journal_size_limit(%d)", rawJournalSizeLimit),
		"_pragma=mmap_size(0)",
	}
	if write {
		q = append(q, "_txlock=immediate")
	}
	return "file:" + p + "?" + strings.Join(q, "&")
}

// rawDB is the baseline's writer: one connection with prepared statements.
type rawDB struct {
	db   *sql.DB
	conn *sql.Conn

	version      *sql.Stmt
	insertEvent  *sql.Stmt
	createStream *sql.Stmt

	// The transaction statements are prepared too, as the store does.
	begin, commit, rollback        *sql.Stmt
	savepoint, release, rollbackTo *sql.Stmt
}

// newRawDB opens (creating, with the store's schema, if needed) a raw
// writer on path.
func newRawDB(path, synchronous string) (_ *rawDB, err error) {
	r := &rawDB{}
	defer func() {
		if err != nil {
			_ = r.Close()
		}
	}()
	if r.db, r.conn, err = openRawConn(path, synchronous); err != nil {
		return nil, err
	}
	if err := rawCreateSchema(r.conn, 0); err != nil {
		return nil, err
	}
	prep := func(q string) *sql.Stmt {
		if err != nil {
			return nil
		}
		var st *sql.Stmt
		st, err = r.conn.PrepareContext(rawCtx, q)
		return st
	}
	r.version = prep(`SELECT COALESCE(MAX(version), 0) FROM events WHERE tenant = ? AND stream_id = ?`)
	r.insertEvent = prep(`INSERT INTO events (tenant, stream_id, version, event_id, type, source, time,
		content_type, attrs, recorded_at, data)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, NULL, ?, ?)`)
	r.createStream = prep(`INSERT INTO streams (tenant, stream_id, created_at) VALUES (?, ?, ?)`)
	r.begin = prep(`BEGIN IMMEDIATE`)
	r.commit = prep(`COMMIT`)
	r.rollback = prep(`ROLLBACK`)
	r.savepoint = prep(`SAVEPOINT a`)
	r.release = prep(`RELEASE a`)
	r.rollbackTo = prep(`ROLLBACK TO a`)
	if err != nil {
		return nil, fmt.Errorf("raw: prepare: %w", err)
	}
	return r, nil
}

// rawCreateSchema applies the store's own migration files
// (internal/sqlitedriver/migrations/*.sql, in order, as the store does), so the baseline writes
// the same tables and indexes (the events table's two unique indexes cost
// every append pages of their own).
// openRawConn opens a raw writer's one connection on path, in WAL mode.
// The caller closes both (db also when conn is nil).
func openRawConn(path, synchronous string) (db *sql.DB, conn *sql.Conn, err error) {
	if db, err = sql.Open("sqlite", rawDSN(path, synchronous, true)); err != nil {
		return nil, nil, err
	}
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	if conn, err = db.Conn(rawCtx); err != nil {
		return db, nil, err
	}
	var mode string
	if err := conn.QueryRowContext(rawCtx, "PRAGMA journal_mode=WAL").Scan(&mode); err != nil {
		return db, conn, fmt.Errorf("raw: WAL: %w", err)
	}
	return db, conn, nil
}

// rawCreateSchema applies the migrations up to number upTo (0: all of
// them) that c's file does not have yet.
func rawCreateSchema(c *sql.Conn, upTo int) error {
	var v int
	if err := c.QueryRowContext(rawCtx, "PRAGMA user_version").Scan(&v); err != nil {
		return err
	}
	files, err := filepath.Glob(filepath.Join("internal", "sqlitedriver", "migrations", "*.sql"))
	if err != nil {
		return err
	}
	if len(files) == 0 {
		return errors.New("raw: no internal/sqlitedriver/migrations/*.sql (run the benchmarks in the store package's directory)")
	}
	slices.Sort(files) // 0001_..., 0002_...
	if upTo > 0 {
		files = files[:min(upTo, len(files))]
	}
	if v >= len(files) {
		return nil
	}
	q := []string{"BEGIN IMMEDIATE"}
	for _, f := range files[v:] {
		b, err := os.ReadFile(f)
		if err != nil {
			return fmt.Errorf("raw: read schema: %w", err)
		}
		q = append(q, string(b))
	}
	q = append(q, fmt.Sprintf("PRAGMA user_version = %d", len(files)), "COMMIT")
	for _, s := range q {
		if _, err := c.ExecContext(rawCtx, s); err != nil {
			_, _ = c.ExecContext(rawCtx, "ROLLBACK")
			return fmt.Errorf("raw: create schema: %w", err)
		}
	}
	return nil
}

func (r *rawDB) Close() error {
	var errs []error
	for _, st := range []*sql.Stmt{r.version, r.insertEvent, r.createStream,
		r.begin, r.commit, r.rollback, r.savepoint, r.release, r.rollbackTo} {
		if st != nil {
			errs = append(errs, st.Close())
		}
	}
	if r.conn != nil {
		errs = append(errs, r.conn.Close())
	}
	if r.db != nil {
		errs = append(errs, r.db.Close())
	}
	return errors.Join(errs...)
}

func rawRun(st *sql.Stmt) error {
	_, err := st.ExecContext(rawCtx)
	return err
}

// appendTx appends evs to a stream in a transaction of its own.
func (r *rawDB) appendTx(tenant, stream string, evs []rawEvent) error {
	if err := rawRun(r.begin); err != nil {
		return err
	}
	if _, err := r.appendLocked(tenant, stream, evs, time.Now().UnixNano()); err != nil {
		_ = rawRun(r.rollback)
		return err
	}
	return rawRun(r.commit)
}

// appendLocked does an append's SQL inside an open transaction and
// returns the stream's new version.
func (r *rawDB) appendLocked(tenant, stream string, evs []rawEvent, now int64) (int64, error) {
	var cur int64
	if err := r.version.QueryRowContext(rawCtx, tenant, stream).Scan(&cur); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return 0, err
	}
	for i := range evs {
		e := &evs[i]
		_, err := r.insertEvent.ExecContext(rawCtx, tenant, stream, cur+int64(i)+1, e.ID, e.Type, rawSource,
			now, rawContentType, now, e.Data)
		if err != nil {
			return 0, err
		}
	}
	if cur == 0 {
		if _, err := r.createStream.ExecContext(rawCtx, tenant, stream, now); err != nil {
			return 0, err
		}
	}
	return cur + int64(len(evs)), nil
}

// groupStmts is what rawGroup needs of a raw writer: its prepared
// transaction statements and an append inside an open transaction.
type groupStmts struct {
	begin, commit                  *sql.Stmt
	savepoint, release, rollbackTo *sql.Stmt
	append                         func(tenant, stream string, evs []rawEvent, now int64) error
}

func (r *rawDB) groupStmts() groupStmts {
	return groupStmts{begin: r.begin, commit: r.commit, savepoint: r.savepoint, release: r.release, rollbackTo: r.rollbackTo,
		append: func(tenant, stream string, evs []rawEvent, now int64) error {
			_, err := r.appendLocked(tenant, stream, evs, now)
			return err
		}}
}

// rawGroup is the baseline for concurrent appends: one writer goroutine
// takes requests from a channel, runs all that are waiting (up to
// rawMaxBatch) in one transaction with a savepoint per request, and
// commits once for all of them.
type rawGroup struct {
	r    groupStmts
	reqs chan *rawReq
	done chan struct{}
}

type rawReq struct {
	tenant, stream string
	evs            []rawEvent
	err            error
	done           chan struct{}
}

// startRawGroup starts a group-commit writer on r; stop it (it drains
// what is queued) before closing r.
func startRawGroup(r groupStmts) *rawGroup {
	g := &rawGroup{r: r, reqs: make(chan *rawReq, 1024), done: make(chan struct{})}
	go g.run()
	return g
}

func (g *rawGroup) stop() {
	close(g.reqs)
	<-g.done
}

func (g *rawGroup) append(tenant, stream string, evs []rawEvent) error {
	q := &rawReq{tenant: tenant, stream: stream, evs: evs, done: make(chan struct{})}
	g.reqs <- q
	<-q.done
	return q.err
}

func (g *rawGroup) run() {
	defer close(g.done)
	group := make([]*rawReq, 0, rawMaxBatch)
	for first := range g.reqs {
		group = append(group[:0], first)
	gather:
		for len(group) < rawMaxBatch {
			select {
			case q, ok := <-g.reqs:
				if !ok {
					break gather
				}
				group = append(group, q)
			default:
				break gather
			}
		}
		g.commit(group)
	}
}

func (g *rawGroup) commit(group []*rawReq) {
	r := g.r
	err := rawRun(r.begin)
	if err == nil {
		now := time.Now().UnixNano()
		for _, q := range group {
			if q.err = rawRun(r.savepoint); q.err != nil {
				continue
			}
			if q.err = r.append(q.tenant, q.stream, q.evs, now); q.err != nil {
				_ = rawRun(r.rollbackTo)
			}
			if rerr := rawRun(r.release); rerr != nil && q.err == nil {
				q.err = rerr
			}
		}
		err = rawRun(r.commit)
	}
	for _, q := range group {
		if err != nil && q.err == nil {
			q.err = err
		}
		close(q.done)
	}
}

// rawReader is the baseline for reads: a pool with the store's read DSN
// and prepared SELECTs of the same columns the store reads.
type rawReader struct {
	db       *sql.DB
	all      *sql.Stmt
	byStream *sql.Stmt
}

const rawSelect = `SELECT position, tenant, stream_id, version, event_id, type, source, time,
	content_type, data, attrs FROM events`

func newRawReader(path string) (*rawReader, error) {
	db, err := sql.Open("sqlite", rawDSN(path, "FULL", false))
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(4)
	db.SetMaxIdleConns(4)
	r := &rawReader{db: db}
	if r.all, err = db.PrepareContext(rawCtx, rawSelect+` WHERE position >= ? ORDER BY position LIMIT ?`); err == nil {
		r.byStream, err = db.PrepareContext(rawCtx, rawSelect+` WHERE tenant = ? AND stream_id = ? ORDER BY version`)
	}
	if err != nil {
		_ = r.Close()
		return nil, err
	}
	return r, nil
}

func (r *rawReader) Close() error {
	for _, st := range []*sql.Stmt{r.all, r.byStream} {
		if st != nil {
			_ = st.Close()
		}
	}
	return r.db.Close()
}

// rawRow holds one scanned row: the columns the store reads, in plain Go
// variables.
type rawRow struct {
	position, version, time             int64
	tenant, stream, id, typ, source, ct string
	data, attrs                         []byte
}

func (w *rawRow) dest() []any {
	return []any{&w.position, &w.tenant, &w.stream, &w.version, &w.id, &w.typ, &w.source, &w.time,
		&w.ct, &w.data, &w.attrs}
}

// scan runs st and calls each for every row; it returns the row count.
func (r *rawReader) scan(st *sql.Stmt, each func(*rawRow), args ...any) (int, error) {
	rows, err := st.QueryContext(rawCtx, args...)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	var w rawRow
	dest := w.dest()
	n := 0
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return n, err
		}
		n++
		each(&w)
	}
	return n, rows.Err()
}
