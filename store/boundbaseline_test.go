package store_test

import (
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"
)

// boundDB is the least any writer on the store's schema can do: the
// store's tables and indexes (its migrations), with the cheapest
// statements known for them and nothing else. An append reads the
// stream's version and the log's last position in one statement, then
// inserts its events up to boundChunk per statement, binding per row only
// what differs between events (id, type, data: tenant, stream, source,
// content type and times are bound once per statement, positions and
// versions are offsets from one bound value), and the streams row of a
// new stream. It checks no lifecycle, floor or removed id, validates
// nothing and runs through database/sql, as the minimal baseline does. Its
// rate against the minimal table is the ceiling of the store's x_min on
// this schema (BenchmarkSchemaCost, "bound").
type boundDB struct {
	db           *sql.DB
	conn         *sql.Conn
	state        *sql.Stmt
	createStream *sql.Stmt
	insert       [boundChunk]*sql.Stmt
	begin        *sql.Stmt
	commit       *sql.Stmt
	rollback     *sql.Stmt
	args         []any
}

// boundChunk is the most events one INSERT of boundDB writes.
const boundChunk = 32

// boundInsertSQL inserts k events: ?1 tenant, ?2 stream, ?3 the position
// before the first event, ?4 the version before it, ?5 source, ?6
// content type, ?7 time and recorded time, then id, type and data of
// each event.
func boundInsertSQL(k int) string {
	var b strings.Builder
	b.WriteString(`INSERT INTO events (position, tenant, stream_id, version, event_id, type, source, time,
		content_type, attrs, recorded_at, data) VALUES `)
	for j := range k {
		if j > 0 {
			b.WriteString(", ")
		}
		p := 8 + 3*j
		fmt.Fprintf(&b, "(?3 + %d, ?1, ?2, ?4 + %d, ?%d, ?%d, ?5, ?7, ?6, NULL, ?7, ?%d)", j+1, j+1, p, p+1, p+2)
	}
	return b.String()
}

func newBoundDB(path, synchronous string) (_ *boundDB, err error) {
	d := &boundDB{}
	defer func() {
		if err != nil {
			_ = d.Close()
		}
	}()
	if d.db, d.conn, err = openRawConn(path, synchronous); err != nil {
		return nil, err
	}
	if err := rawCreateSchema(d.conn, 0); err != nil {
		return nil, err
	}
	prep := func(q string) *sql.Stmt {
		if err != nil {
			return nil
		}
		var st *sql.Stmt
		st, err = d.conn.PrepareContext(rawCtx, q)
		return st
	}
	d.state = prep(`SELECT COALESCE((SELECT MAX(version) FROM events WHERE tenant = ?1 AND stream_id = ?2), 0),
		COALESCE((SELECT MAX(position) FROM events), 0)`)
	d.createStream = prep(`INSERT INTO streams (tenant, stream_id, created_at) VALUES (?, ?, ?)`)
	d.begin = prep(`BEGIN IMMEDIATE`)
	d.commit = prep(`COMMIT`)
	d.rollback = prep(`ROLLBACK`)
	if err != nil {
		return nil, fmt.Errorf("bound: prepare: %w", err)
	}
	return d, nil
}

func (d *boundDB) Close() error {
	var errs []error
	sts := append([]*sql.Stmt{d.state, d.createStream, d.begin, d.commit, d.rollback}, d.insert[:]...)
	for _, st := range sts {
		if st != nil {
			errs = append(errs, st.Close())
		}
	}
	if d.conn != nil {
		errs = append(errs, d.conn.Close())
	}
	if d.db != nil {
		errs = append(errs, d.db.Close())
	}
	return errors.Join(errs...)
}

func (d *boundDB) appendTx(tenant, stream string, evs []rawEvent) error {
	if err := rawRun(d.begin); err != nil {
		return err
	}
	if err := d.appendLocked(tenant, stream, evs, time.Now().UnixNano()); err != nil {
		_ = rawRun(d.rollback)
		return err
	}
	return rawRun(d.commit)
}

func (d *boundDB) appendLocked(tenant, stream string, evs []rawEvent, now int64) error {
	var ver, pos int64
	if err := d.state.QueryRowContext(rawCtx, tenant, stream).Scan(&ver, &pos); err != nil {
		return err
	}
	for s := 0; s < len(evs); s += boundChunk {
		k := min(boundChunk, len(evs)-s)
		st := d.insert[k-1]
		if st == nil {
			var err error
			if st, err = d.conn.PrepareContext(rawCtx, boundInsertSQL(k)); err != nil {
				return err
			}
			d.insert[k-1] = st
		}
		d.args = append(d.args[:0], tenant, stream, pos+int64(s), ver+int64(s), rawSource, rawContentType, now)
		for _, e := range evs[s : s+k] {
			d.args = append(d.args, e.ID, e.Type, e.Data)
		}
		if _, err := st.ExecContext(rawCtx, d.args...); err != nil {
			return err
		}
	}
	if ver == 0 {
		if _, err := d.createStream.ExecContext(rawCtx, tenant, stream, now); err != nil {
			return err
		}
	}
	return nil
}
