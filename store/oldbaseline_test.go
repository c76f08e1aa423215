package store_test

// The old raw baseline: the store's schema and append statements as they
// were before the append-cost work changed them (migrations 0001-0013,
// which never change once released): the stream's row read and moved on
// every append, an AUTOINCREMENT position, an outbox row per event. The
// store is measured against it (x_old) so that a change of schema shows
// what it bought against what a user had before, beside x_raw (the
// store's current schema in raw SQL) and x_min (the minimal table).

import (
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// oldSchema is the last migration of the old baseline's schema.
const oldSchema = 13

// oldRawDB is the old raw baseline's writer: one connection with prepared
// statements, BEGIN IMMEDIATE, the pragmas of rawDSN.
type oldRawDB struct {
	db   *sql.DB
	conn *sql.Conn

	version, insertEvent, insertOutbox, upsertStream *sql.Stmt
	begin, commit, rollback                          *sql.Stmt
}

func newOldRawDB(path, synchronous string) (_ *oldRawDB, err error) {
	r := &oldRawDB{}
	defer func() {
		if err != nil {
			_ = r.Close()
		}
	}()
	if r.db, r.conn, err = openRawConn(path, synchronous); err != nil {
		return nil, err
	}
	if err := rawCreateSchema(r.conn, oldSchema); err != nil {
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
	r.version = prep(`SELECT version FROM streams WHERE tenant = ? AND stream_id = ?`)
	r.insertEvent = prep(`INSERT INTO events (tenant, stream_id, version, event_id, type, source, time,
		content_type, data_schema, data, correlation_id, causation_id, extensions, recorded_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
	r.insertOutbox = prep(`INSERT INTO outbox (position) VALUES (?)`)
	r.upsertStream = prep(`INSERT INTO streams (tenant, stream_id, version, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (tenant, stream_id) DO UPDATE SET version = excluded.version, updated_at = excluded.updated_at`)
	r.begin = prep(`BEGIN IMMEDIATE`)
	r.commit = prep(`COMMIT`)
	r.rollback = prep(`ROLLBACK`)
	if err != nil {
		return nil, fmt.Errorf("old raw: prepare: %w", err)
	}
	return r, nil
}

func (r *oldRawDB) Close() error {
	var errs []error
	for _, st := range []*sql.Stmt{r.version, r.insertEvent, r.insertOutbox, r.upsertStream, r.begin, r.commit, r.rollback} {
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

// appendTx is the old append: read the stream's version, insert each
// event and its outbox row, move the stream's row on.
func (r *oldRawDB) appendTx(tenant, stream string, evs []rawEvent) (err error) {
	if err := rawRun(r.begin); err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = rawRun(r.rollback)
		}
	}()
	now := time.Now().UnixNano()
	var cur int64
	if err := r.version.QueryRowContext(rawCtx, tenant, stream).Scan(&cur); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return err
	}
	for i := range evs {
		e := &evs[i]
		res, err := r.insertEvent.ExecContext(rawCtx, tenant, stream, cur+int64(i)+1, e.ID, e.Type, rawSource,
			now, rawContentType, "", e.Data, "", "", nil, now)
		if err != nil {
			return err
		}
		pos, err := res.LastInsertId()
		if err != nil {
			return err
		}
		if _, err := r.insertOutbox.ExecContext(rawCtx, pos); err != nil {
			return err
		}
	}
	if _, err := r.upsertStream.ExecContext(rawCtx, tenant, stream, cur+int64(len(evs)), now, now); err != nil {
		return err
	}
	return rawRun(r.commit)
}
