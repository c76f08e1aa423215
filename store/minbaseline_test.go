package store_test

// The second raw baseline: the least an event store on SQLite is, the
// shape of the lightest Go event stores (one table of stream, version,
// type, data and time; primary key stream + version): no tenant, no
// outbox, no unique event id, no streams table, no envelope attributes.
// It runs in the same process, with the same driver, pragmas and
// connection shape as rawDB (rawDSN, one connection, prepared statements,
// BEGIN IMMEDIATE). An append reads the stream's newest version from the
// primary key and inserts the events; a read selects the five columns.
// The store keeps guarantees this table cannot (an outbox row per event in
// the same transaction, event ids unique per tenant, a streams table), so
// x_min (store rate / this rate) says what those guarantees cost.

import (
	"database/sql"
	"errors"
	"fmt"
	"time"
)

const minSchema = `CREATE TABLE IF NOT EXISTS events (
	stream  TEXT    NOT NULL,
	version INTEGER NOT NULL,
	type    TEXT    NOT NULL,
	data    BLOB,
	time    INTEGER NOT NULL,
	PRIMARY KEY (stream, version)
)`

// minDB is the minimal store's writer.
type minDB struct {
	db     *sql.DB
	conn   *sql.Conn
	newest *sql.Stmt
	insert *sql.Stmt

	begin, commit, rollback        *sql.Stmt
	savepoint, release, rollbackTo *sql.Stmt
}

func newMinDB(path, synchronous string) (_ *minDB, err error) {
	m := &minDB{}
	defer func() {
		if err != nil {
			_ = m.Close()
		}
	}()
	if m.db, err = sql.Open("sqlite", rawDSN(path, synchronous, true)); err != nil {
		return nil, err
	}
	m.db.SetMaxOpenConns(1)
	m.db.SetMaxIdleConns(1)
	if m.conn, err = m.db.Conn(rawCtx); err != nil {
		return nil, err
	}
	var mode string
	if err := m.conn.QueryRowContext(rawCtx, "PRAGMA journal_mode=WAL").Scan(&mode); err != nil {
		return nil, fmt.Errorf("minimal: WAL: %w", err)
	}
	if _, err := m.conn.ExecContext(rawCtx, minSchema); err != nil {
		return nil, fmt.Errorf("minimal: schema: %w", err)
	}
	prep := func(q string) *sql.Stmt {
		if err != nil {
			return nil
		}
		var st *sql.Stmt
		st, err = m.conn.PrepareContext(rawCtx, q)
		return st
	}
	m.newest = prep(`SELECT COALESCE(MAX(version), 0) FROM events WHERE stream = ?`)
	m.insert = prep(`INSERT INTO events (stream, version, type, data, time) VALUES (?, ?, ?, ?, ?)`)
	m.begin = prep(`BEGIN IMMEDIATE`)
	m.commit = prep(`COMMIT`)
	m.rollback = prep(`ROLLBACK`)
	m.savepoint = prep(`SAVEPOINT a`)
	m.release = prep(`RELEASE a`)
	m.rollbackTo = prep(`ROLLBACK TO a`)
	if err != nil {
		return nil, fmt.Errorf("minimal: prepare: %w", err)
	}
	return m, nil
}

func (m *minDB) Close() error {
	var errs []error
	for _, st := range []*sql.Stmt{m.newest, m.insert, m.begin, m.commit, m.rollback, m.savepoint, m.release, m.rollbackTo} {
		if st != nil {
			errs = append(errs, st.Close())
		}
	}
	if m.conn != nil {
		errs = append(errs, m.conn.Close())
	}
	if m.db != nil {
		errs = append(errs, m.db.Close())
	}
	return errors.Join(errs...)
}

// appendTx appends evs to a stream in a transaction of its own. The
// tenant is not stored: the minimal table has none.
func (m *minDB) appendTx(_ string, stream string, evs []rawEvent) error {
	if err := rawRun(m.begin); err != nil {
		return err
	}
	if err := m.appendLocked(stream, evs, time.Now().UnixNano()); err != nil {
		_ = rawRun(m.rollback)
		return err
	}
	return rawRun(m.commit)
}

func (m *minDB) appendLocked(stream string, evs []rawEvent, now int64) error {
	var cur int64
	if err := m.newest.QueryRowContext(rawCtx, stream).Scan(&cur); err != nil {
		return err
	}
	for i := range evs {
		if _, err := m.insert.ExecContext(rawCtx, stream, cur+int64(i)+1, evs[i].Type, evs[i].Data, now); err != nil {
			return err
		}
	}
	return nil
}

// groupStmts lets rawGroup commit minimal appends in groups.
func (m *minDB) groupStmts() groupStmts {
	return groupStmts{begin: m.begin, commit: m.commit, savepoint: m.savepoint, release: m.release, rollbackTo: m.rollbackTo,
		append: func(_, stream string, evs []rawEvent, now int64) error { return m.appendLocked(stream, evs, now) }}
}

// minReader reads the minimal table: the whole log in insertion (rowid)
// order, or one stream by version.
type minReader struct {
	db       *sql.DB
	all      *sql.Stmt
	byStream *sql.Stmt
}

func newMinReader(path string) (*minReader, error) {
	db, err := sql.Open("sqlite", rawDSN(path, "FULL", false))
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(4)
	db.SetMaxIdleConns(4)
	r := &minReader{db: db}
	const sel = `SELECT rowid, stream, version, type, data, time FROM events`
	if r.all, err = db.PrepareContext(rawCtx, sel+` WHERE rowid >= ? ORDER BY rowid LIMIT ?`); err == nil {
		r.byStream, err = db.PrepareContext(rawCtx, sel+` WHERE stream = ? ORDER BY version`)
	}
	if err != nil {
		_ = r.Close()
		return nil, err
	}
	return r, nil
}

func (r *minReader) Close() error {
	for _, st := range []*sql.Stmt{r.all, r.byStream} {
		if st != nil {
			_ = st.Close()
		}
	}
	return r.db.Close()
}

// minRow holds one scanned row of the minimal table.
type minRow struct {
	seq, version, time int64
	stream, typ        string
	data               []byte
}

func (w *minRow) dest() []any {
	return []any{&w.seq, &w.stream, &w.version, &w.typ, &w.data, &w.time}
}

// buildMinFixture copies the events of the store's file at from into a
// minimal table at path, in position order (so rowid order is the log's
// order), unless path holds them already.
func buildMinFixture(path, from string, n int) error {
	db, err := sql.Open("sqlite", rawDSN(path, "OFF", true))
	if err != nil {
		return err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	c, err := db.Conn(rawCtx)
	if err != nil {
		return err
	}
	defer c.Close()
	if _, err := c.ExecContext(rawCtx, minSchema); err != nil {
		return err
	}
	var have int
	if err := c.QueryRowContext(rawCtx, `SELECT COALESCE(MAX(rowid), 0) FROM events`).Scan(&have); err != nil {
		return err
	}
	if have >= n {
		return nil
	}
	if have > 0 {
		return fmt.Errorf("%s holds %d events, want 0 or at least %d", path, have, n)
	}
	for _, q := range []string{
		"PRAGMA journal_mode=OFF",
		"ATTACH DATABASE " + sqlQuote(from) + " AS src",
		`INSERT INTO events (rowid, stream, version, type, data, time)
			SELECT position, stream_id, version, type, data, time FROM src.events ORDER BY position`,
		"DETACH DATABASE src",
		"PRAGMA journal_mode=WAL",
	} {
		if _, err := c.ExecContext(rawCtx, q); err != nil {
			return fmt.Errorf("minimal fixture: %s: %w", q, err)
		}
	}
	return nil
}

func sqlQuote(s string) string {
	out := []byte{'\''}
	for i := 0; i < len(s); i++ {
		if s[i] == '\'' {
			out = append(out, '\'')
		}
		out = append(out, s[i])
	}
	return string(append(out, '\''))
}
