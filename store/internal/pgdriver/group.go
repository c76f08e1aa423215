package pgdriver

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/store/internal/driver"
)

// DecidedAppendSQL is one append decided by the server (driver.GroupWriter),
// under the head row lock the transaction took first. Its parameters: the
// tenant ($1), the stream ($2), the versions the stream may have (from $3
// to $4), the recording time ($5), and the batch's columns as arrays
// ($6..$15, unnest; $6 the event ids). It answers one row: the stream's
// lifecycle state (NULL: no streams row), its version and the last
// position handed out, as read before the append, whether it wrote, and
// whether its condition failed (never, here: see decidedSQL).
//
// It is built from three parts, so that a check or a write joins the
// others where it belongs:
//
//   - appendStateSQL (CTE st): what the append decides on, read once;
//   - appendGateSQL (CTE ok: st's row when every check holds, else no
//     row): the stream's lifecycle, the expected version, the version and
//     position ranges, and the batch's ids (neither stored in the tenant
//     nor removed by a scavenge). A refused append writes nothing and
//     fails no statement, so the transaction it shares with its group
//     goes on and the store decides what to answer (a conflict, a retry,
//     a reused id) from the state this statement returns;
//   - appendWritesSQL (one writable CTE per table, each driven by ok):
//     the events at the positions after the head, the head's move, and
//     the streams row of a stream created or revived.
//
// No writer moves the head or inserts an event without the head row
// lock, so the state read here holds until the commit, and no insert of
// this statement can meet a key another transaction holds.
var DecidedAppendSQL = decidedSQL(false, false, "")

// DecidedAppendOrFailSQL is DecidedAppendSQL for a group sent with its
// COMMIT (AppendGroup's commit): a refused append fails its statement
// (dividing by the number of rows of ok, 0), so that the COMMIT after it
// in the pipeline never runs: the server skips the rest of the pipeline
// and the group is rolled back whole. The store then sends the group
// again without its COMMIT, to find out why.
var DecidedAppendOrFailSQL = decidedSQL(true, false, "")

// decidedSQL is DecidedAppendSQL (or, with orFail, DecidedAppendOrFailSQL)
// for a batch with tags (tagged) and a condition (match, SQL that holds
// when an event the condition does not allow is stored: the append is
// refused). A tagged batch writes its tag rows in a writable CTE of the
// same statement, from two more arrays: the tags ($16) and the number of
// each one's event in the batch, from 1 ($17). The condition's
// parameters follow.
func decidedSQL(orFail, tagged bool, match string) string {
	cond := "FALSE"
	if match != "" {
		cond = match
	}
	q := `WITH st AS (
	SELECT (SELECT deleted FROM streams WHERE tenant = $1 AND stream_id = $2) AS deleted,
		COALESCE((SELECT max(version) FROM events WHERE tenant = $1 AND stream_id = $2), 0) AS version,
		(SELECT position FROM log_head) AS last,
		cardinality($6::text[]) AS n,
		` + cond + ` AS cond_failed),
	` + appendGateSQL + `,
	` + appendWritesSQL
	if tagged {
		q += `,
	tags AS (INSERT INTO event_tags (tenant, tag, position)
		SELECT $1::text, t.tag, ok.last + t.i FROM ok, unnest($16::text[], $17::bigint[]) AS t (tag, i)
		ON CONFLICT DO NOTHING)`
	}
	if orFail {
		return q + `
	SELECT st.deleted, st.version, st.last, 1 / (SELECT count(*) FROM ok)::int = 1, st.cond_failed FROM st`
	}
	return q + `
	SELECT st.deleted, st.version, st.last, EXISTS (SELECT 1 FROM ok), st.cond_failed FROM st`
}

var appendGateSQL = fmt.Sprintf(`ok AS (
	SELECT st.* FROM st
	WHERE st.deleted IS DISTINCT FROM 2
		AND NOT st.cond_failed
		AND (CASE WHEN st.deleted IS NULL OR st.deleted = 1 THEN 0 ELSE st.version END) BETWEEN $3::bigint AND $4::bigint
		AND st.version <= %d - st.n
		AND st.last <= %d - st.n
		AND NOT EXISTS (SELECT 1 FROM events e WHERE e.tenant = $1 AND e.event_id = ANY ($6::text[]))
		AND NOT EXISTS (SELECT 1 FROM removed_event_ids r WHERE r.tenant = $1 AND r.event_id = ANY ($6::text[])))`,
	envelope.MaxStreamVersion, envelope.MaxPosition)

const appendWritesSQL = `ins AS (
	INSERT INTO events (position, tenant, stream_id, version, event_id, type, source, time,
		content_type, data_schema, data, correlation_id, causation_id, extensions, recorded_at)
	SELECT ok.last + u.i, $1::text, $2::text, ok.version + u.i, u.event_id, u.type, u.source, u.time,
		u.content_type, u.data_schema, u.data, u.correlation_id, u.causation_id, u.extensions, $5::bigint
	FROM ok, unnest($6::text[], $7::text[], $8::text[], $9::bigint[], $10::text[], $11::text[],
		$12::bytea[], $13::text[], $14::text[], $15::text[]) WITH ORDINALITY
		AS u (event_id, type, source, time, content_type, data_schema, data, correlation_id, causation_id, extensions, i)),
	head AS (UPDATE log_head SET position = ok.last + ok.n FROM ok),
	created AS (INSERT INTO streams (tenant, stream_id, created_at) SELECT $1, $2, $5 FROM ok WHERE ok.deleted IS NULL),
	revived AS (UPDATE streams SET deleted = 0 FROM ok WHERE ok.deleted = 1 AND streams.tenant = $1 AND streams.stream_id = $2)`

// AppendGroup sends, in one round trip (a pipelined batch), the write
// transaction's beginning (BeginSQL's three statements) and each batch's
// DecidedAppendSQL. Without commit the COMMIT is the store's next call:
// it decides first what a refused append answers, reading in the
// transaction. With commit, each batch's DecidedAppendOrFailSQL and the
// COMMIT: one round trip for a group whose appends all hold.
func (w *writer) AppendGroup(ctx context.Context, bs []driver.DecidedBatch, out []driver.Decision, commit bool) (int, error) {
	w.released, w.opened, w.trackErr = false, false, nil
	for len(w.group) < len(bs) {
		w.group = append(w.group, eventCols{})
	}
	var b pgx.Batch
	b.Queue("BEGIN ISOLATION LEVEL READ COMMITTED")
	b.Queue("SET LOCAL search_path TO " + w.schema)
	b.Queue(BeginWriteSQL, w.channel)
	const begins = 3
	for i := range bs {
		c := &w.group[i]
		if err := c.fill(bs[i].EventBatch); err != nil {
			return i, err // nothing sent
		}
		args := []any{bs[i].Tenant, bs[i].Stream, bs[i].Lo, bs[i].Hi, bs[i].RecordedAt,
			c.ids, c.types, c.sources, c.times, c.contentTypes, c.schemas, c.data, c.corrs, c.causes, c.exts}
		q := DecidedAppendSQL
		if commit {
			q = DecidedAppendOrFailSQL
		}
		tagged := driver.BatchHasTags(bs[i].Events)
		if tagged || bs[i].Cond != nil {
			if tagged {
				var tags []string
				var nth []int64
				for k := range bs[i].Events {
					for _, t := range bs[i].Events[k].Tags {
						tags = append(tags, t)
						nth = append(nth, int64(k+1))
					}
				}
				args = append(args, tags, nth)
			}
			match := ""
			if bs[i].Cond != nil {
				var margs []any
				match, margs = driver.MatchAfterSQL(len(args), bs[i].Tenant, bs[i].Cond, bs[i].CondAfter)
				args = append(args, margs...)
			}
			q = decidedSQL(commit, tagged, match)
		}
		b.Queue(q, args...)
	}
	if commit {
		b.Queue("COMMIT")
	}
	failed := -1
	err := w.conn.Raw(func(dc any) error {
		br := dc.(*stdlib.Conn).Conn().SendBatch(ctx, &b)
		var err error
		for range begins {
			if _, err = br.Exec(); err != nil {
				break
			}
		}
		if err == nil {
			for i := range bs {
				var deleted sql.NullInt64
				st := &out[i].State
				if err = br.QueryRow().Scan(&deleted, &st.Version, &st.LastPosition, &out[i].Inserted, &out[i].CondFailed); err != nil {
					failed = i
					break
				}
				st.Row, st.Deleted = deleted.Valid, deleted.Int64
			}
		}
		if err == nil && commit {
			// PostgreSQL answers the COMMIT of a failed transaction with
			// ROLLBACK and no error.
			var tag pgconn.CommandTag
			if tag, err = br.Exec(); err == nil && tag.String() != "COMMIT" {
				err = errors.New("the transaction was rolled back at its commit")
			}
			if err != nil {
				failed = len(bs)
			}
		}
		return errors.Join(err, br.Close())
	})
	for i := range bs {
		clear(w.group[i].data)
	}
	if err != nil {
		_, _ = w.conn.ExecContext(context.Background(), "ROLLBACK")
		return failed, err
	}
	return 0, nil
}
