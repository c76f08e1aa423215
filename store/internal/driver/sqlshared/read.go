package sqlshared

import (
	"context"
	"database/sql"
	"errors"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/store/internal/driver"
)

// The reads of events that are not a hot path: by id, a stream's newest
// and a range of its versions, the head, and the list of streams. The
// reader's prepared reads of a stream and of the log (ReadStream,
// ReadAll), and catch-up's, are each engine's own.

// Scanner is a *sql.Row or *sql.Rows.
type Scanner = interface{ Scan(dest ...any) error }

// EventScanner scans rows of a driver's SelectEvents (or, made for one
// stream, of its SelectStreamEvents) into events.
type EventScanner interface {
	Scan(r Scanner) (envelope.Event, error)
}

// ScanEvents appends the events of rows to page and closes rows.
func ScanEvents(rows *sql.Rows, sc EventScanner, page []envelope.Event) ([]envelope.Event, error) {
	defer rows.Close()
	for rows.Next() {
		e, err := sc.Scan(rows)
		if err != nil {
			return page, err
		}
		page = append(page, e)
	}
	if err := rows.Err(); err != nil {
		return page, err
	}
	return page, rows.Close()
}

// Head reads the highest position.
func (Exec[D]) Head(ctx context.Context, q driver.ReadQuerier) (int64, error) {
	var h int64
	err := q.QueryRowContext(ctx, `SELECT COALESCE(max(position), 0) FROM events`).Scan(&h)
	return h, err
}

// EventByID reads by the (tenant, event_id) index.
func (x Exec[D]) EventByID(ctx context.Context, q driver.ReadQuerier, tenant, id string) (envelope.Event, bool, error) {
	d := x.dialect()
	e, err := d.EventScanner().Scan(q.QueryRowContext(ctx, x.bind(d.SelectEvents()+` WHERE tenant = ? AND event_id = ?`), tenant, id))
	if errors.Is(err, sql.ErrNoRows) {
		return envelope.Event{}, false, nil
	}
	if err != nil {
		return envelope.Event{}, false, err
	}
	return e, true, nil
}

// NewestEvents reads by the (tenant, stream_id, version) index.
func (x Exec[D]) NewestEvents(ctx context.Context, q driver.ReadQuerier, tenant, stream string, after int64, n int) ([]envelope.Event, error) {
	d := x.dialect()
	rows, err := q.QueryContext(ctx, x.bind(d.SelectEvents()+` WHERE tenant = ? AND stream_id = ? AND version > ? ORDER BY version`),
		tenant, stream, after)
	if err != nil {
		return nil, err
	}
	return ScanEvents(rows, d.EventScanner(), make([]envelope.Event, 0, n))
}

// StreamEvents reads a stream's versions from..to, row by row.
func (x Exec[D]) StreamEvents(ctx context.Context, q driver.ReadQuerier, tenant, stream string, from, to int64, fn func(envelope.Event) error) error {
	d := x.dialect()
	rows, err := q.QueryContext(ctx, x.bind(d.SelectStreamEvents()+` WHERE tenant = ? AND stream_id = ? AND version BETWEEN ? AND ? ORDER BY version`),
		tenant, stream, from, to)
	if err != nil {
		return err
	}
	defer rows.Close()
	sc := d.StreamEventScanner(tenant, stream)
	for rows.Next() {
		e, err := sc.Scan(rows)
		if err != nil {
			return err
		}
		if err := fn(e); err != nil {
			return err
		}
	}
	return rows.Err()
}

// StreamsPageSQL lists a page of a tenant's streams from the stream id
// given second on (op: > or >=), in d's spelling, unbound. A stream's
// version, updated time and positions come from the UNIQUE(tenant,
// stream_id, version) index: its newest event (found by MAX(version))
// and its first retained one, a few lookups per stream, in the streams'
// primary key order. The versions a restore took back (version_gaps,
// keyed by stream, kept by a copy) within the stream's readable range
// come last: a lookup that finds nothing on a stream without gaps.
func StreamsPageSQL(d Dialect, op string) string {
	return `SELECT s.stream_id, COALESCE(n.version, 0), s.first_version, s.created_at, COALESCE(n.recorded_at, s.created_at),
		COALESCE((SELECT position FROM events e WHERE e.tenant = s.tenant AND e.stream_id = s.stream_id AND e.version = s.first_version), 0),
		COALESCE(n.position, 0),
		` + d.Int64(`COALESCE((SELECT sum(`+d.Least()+`(g.to_version, n.version) - `+d.Greatest()+`(g.from_version, s.first_version) + 1) FROM version_gaps g
			WHERE g.tenant = s.tenant AND g.stream_id = s.stream_id AND g.from_version <= n.version AND g.to_version >= s.first_version), 0)`) + `
		FROM streams s LEFT JOIN events n ON n.tenant = s.tenant AND n.stream_id = s.stream_id
			AND n.version = (SELECT max(version) FROM events e WHERE e.tenant = s.tenant AND e.stream_id = s.stream_id)
		WHERE s.tenant = ? AND s.stream_id ` + op + ` ? AND s.deleted = 0 ORDER BY s.stream_id LIMIT ?`
}

// StreamsPage runs StreamsPageSQL.
func (x Exec[D]) StreamsPage(ctx context.Context, q driver.ReadQuerier, tenant, from string, inclusive bool, n int) ([]driver.StreamRow, error) {
	op := ">"
	if inclusive {
		op = ">="
	}
	rows, err := q.QueryContext(ctx, x.bind(StreamsPageSQL(x.dialect(), op)), tenant, from, n)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []driver.StreamRow
	for rows.Next() {
		var r driver.StreamRow
		if err := rows.Scan(&r.Stream, &r.Version, &r.FirstVersion, &r.CreatedAt, &r.UpdatedAt, &r.FirstPosition, &r.LastPosition, &r.GapVersions); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}
