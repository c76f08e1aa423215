package projection

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/internal/inside"
	"github.com/eventlite/eventlite/internal/timecol"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/lifecycle"
)

// CatalogName is the name of the built-in catalog projection.
const CatalogName = "catalog"

// catalogTable is the catalog's one table: a row per tenant and stream.
const catalogTable = "catalog"

// Catalog returns the built-in catalog projection: per tenant and stream,
// the stream's version, its events counted by type, and the times of its
// first and newest events. It reads every event type. A deleted stream
// has no row; a truncated one counts the events it retains (from the
// truncate's "before" on).
//
// The counts by type are a JSON object in one column, read, added to and
// written back whole by Go's encoding/json (its keys sorted): an event
// type is only ever a JSON key written by the encoder, never part of an
// SQL text or a JSON path. One row per stream keeps a rebuild's writes to
// one per stream and batch.
func Catalog() Projection {
	return Projection{
		Name: CatalogName,
		Tables: []Table{{Name: catalogTable, Schemas: map[store.Dialect]string{
			store.DialectSQLite: `CREATE TABLE {table} (
			tenant         TEXT    NOT NULL,
			stream         TEXT    NOT NULL,
			version        INTEGER NOT NULL, -- the newest event's stream version
			events_by_type TEXT    NOT NULL, -- JSON object: type -> events, keys sorted
			first_time     INTEGER NOT NULL, -- the first event's time, unix nanoseconds UTC, or RFC 3339 TEXT outside 1677-2262
			last_time      INTEGER NOT NULL, -- the newest event's time
			PRIMARY KEY (tenant, stream)
		) WITHOUT ROWID`,
			// The times are BIGINT as in the events table: PostgreSQL's
			// store keeps only event times that unix nanoseconds hold.
			store.DialectPostgres: `CREATE TABLE {table} (
			tenant         TEXT COLLATE "C" NOT NULL,
			stream         TEXT COLLATE "C" NOT NULL,
			version        BIGINT NOT NULL, -- the newest event's stream version
			events_by_type TEXT   NOT NULL, -- JSON object: type -> events, keys sorted
			first_time     BIGINT NOT NULL, -- the first event's time, unix nanoseconds UTC
			last_time      BIGINT NOT NULL, -- the newest event's time
			PRIMARY KEY (tenant, stream)
		)`,
		}}},
		Apply:      applyCatalog,
		ApplyBatch: applyCatalogBatch,
	}
}

// catalogUpsert writes rows of (tenant, stream, version, events_by_type,
// first_time, last_time). The counts replace the stored ones (the caller
// added to them); version and last time move only forward. Events reach a
// projection in position order, so a stream's versions arrive in order;
// the guard keeps the newest even so. One statement for both engines:
// $n placeholders, the target aliased so that its columns are qualified,
// CASE where SQLite has max() and PostgreSQL GREATEST().
func catalogUpsert(table string, rows int) string {
	return `INSERT INTO ` + table + ` AS c (tenant, stream, version, events_by_type, first_time, last_time)
		VALUES ` + values(rows, 6) + `
		ON CONFLICT (tenant, stream) DO UPDATE SET
			events_by_type = excluded.events_by_type,
			last_time = CASE WHEN excluded.version > c.version THEN excluded.last_time ELSE c.last_time END,
			version = CASE WHEN excluded.version > c.version THEN excluded.version ELSE c.version END`
}

func applyCatalog(ctx context.Context, tx *Tx, e envelope.Event) error {
	if e.Type == lifecycle.TypeStreamDeleted || e.Type == lifecycle.TypeStreamTruncated {
		return applyCatalogLifecycle(ctx, tx, e)
	}
	table := tx.Table(catalogTable)
	var stored string
	err := tx.QueryRowContext(ctx, `SELECT events_by_type FROM `+table+` WHERE tenant = $1 AND stream = $2`, e.Tenant, e.Stream).Scan(&stored)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return err
	}
	counts, err := decodeCounts(stored)
	if err != nil {
		return err
	}
	counts[e.Type]++
	b, err := json.Marshal(counts)
	if err != nil {
		return err
	}
	t := timecol.Value(e.Time)
	_, err = tx.ExecContext(ctx, catalogUpsert(table, 1), e.Tenant, e.Stream, e.StreamVersion, string(b), t, t)
	return err
}

func decodeCounts(s string) (map[string]int64, error) {
	counts := map[string]int64{}
	if s == "" {
		return counts, nil
	}
	if err := json.Unmarshal([]byte(s), &counts); err != nil {
		return nil, fmt.Errorf("catalog: events_by_type %q: %w", s, err)
	}
	return counts, nil
}

// catalogChunk caps the rows of one multi-row statement (6 parameters a
// row, far below SQLite's limit of 32,766).
const catalogChunk = 200

type catalogKey struct{ tenant, stream string }

type catalogRow struct {
	version     int64
	first, last any // timecol.Value
	counts      map[string]int64
}

// applyCatalogLifecycle applies a stream's lifecycle event: a delete
// removes the stream's row (it reads as not found; an append that revives
// it starts a new one), a truncate before N recounts the row over the
// versions N up to the truncate's own, which is what the stream retains.
func applyCatalogLifecycle(ctx context.Context, tx *Tx, e envelope.Event) error {
	table := tx.Table(catalogTable)
	if _, err := tx.ExecContext(ctx, `DELETE FROM `+table+` WHERE tenant = $1 AND stream = $2`, e.Tenant, e.Stream); err != nil {
		return err
	}
	if e.Type == lifecycle.TypeStreamDeleted {
		return nil
	}
	var t lifecycle.StreamTruncated
	if err := json.Unmarshal(e.Data, &t); err != nil {
		return fmt.Errorf("catalog: %s at position %d: %w", e.Type, e.Position, err)
	}
	var r *catalogRow
	err := store.Bookkeeping(inside.Key{}, tx.tx).StreamEvents(ctx, e.Tenant, e.Stream, t.Before, e.StreamVersion, func(x envelope.Event) error {
		tv := timecol.Value(x.Time)
		if r == nil {
			r = &catalogRow{first: tv, counts: map[string]int64{}}
		}
		r.version, r.last = x.StreamVersion, tv
		r.counts[x.Type]++
		return nil
	})
	if err != nil || r == nil {
		return err
	}
	b, err := json.Marshal(r.counts)
	if err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, catalogUpsert(table, 1), e.Tenant, e.Stream, r.version, string(b), r.first, r.last)
	return err
}

// applyCatalogBatch does what applyCatalog does for each event, with one
// read and one write per stream of each run of the batch between
// lifecycle events: the counts are added up in memory first.
func applyCatalogBatch(ctx context.Context, tx *Tx, events []envelope.Event) error {
	start := 0
	for i := range events {
		if t := events[i].Type; t == lifecycle.TypeStreamDeleted || t == lifecycle.TypeStreamTruncated {
			if err := applyCatalogRun(ctx, tx, events[start:i]); err != nil {
				return err
			}
			if err := applyCatalogLifecycle(ctx, tx, events[i]); err != nil {
				return err
			}
			start = i + 1
		}
	}
	return applyCatalogRun(ctx, tx, events[start:])
}

// applyCatalogRun applies events that hold no lifecycle event.
func applyCatalogRun(ctx context.Context, tx *Tx, events []envelope.Event) error {
	if len(events) == 0 {
		return nil
	}
	rows := make(map[catalogKey]*catalogRow)
	var order []catalogKey
	for i := range events {
		e := &events[i]
		k := catalogKey{e.Tenant, e.Stream}
		t := timecol.Value(e.Time)
		r, ok := rows[k]
		if !ok {
			r = &catalogRow{version: e.StreamVersion, first: t, last: t, counts: map[string]int64{}}
			rows[k] = r
			order = append(order, k)
		} else if e.StreamVersion > r.version {
			r.version, r.last = e.StreamVersion, t
		}
		r.counts[e.Type]++
	}
	table := tx.Table(catalogTable)
	args := make([]any, 0, 6*catalogChunk)
	for i := 0; i < len(order); i += catalogChunk {
		chunk := order[i:min(i+catalogChunk, len(order))]
		// Add the stored counts of the streams seen before.
		args = args[:0]
		for _, k := range chunk {
			args = append(args, k.tenant, k.stream)
		}
		q, err := tx.QueryContext(ctx, `SELECT tenant, stream, events_by_type FROM `+table+`
			WHERE (tenant, stream) IN (VALUES `+values(len(chunk), 2)+`)`, args...)
		if err != nil {
			return err
		}
		for q.Next() {
			var k catalogKey
			var stored string
			if err := q.Scan(&k.tenant, &k.stream, &stored); err != nil {
				q.Close()
				return err
			}
			counts, err := decodeCounts(stored)
			if err != nil {
				q.Close()
				return err
			}
			for typ, n := range rows[k].counts {
				counts[typ] += n
			}
			rows[k].counts = counts
		}
		if err := errors.Join(q.Err(), q.Close()); err != nil {
			return err
		}
		args = args[:0]
		for _, k := range chunk {
			r := rows[k]
			b, err := json.Marshal(r.counts)
			if err != nil {
				return err
			}
			args = append(args, k.tenant, k.stream, r.version, string(b), r.first, r.last)
		}
		if _, err := tx.ExecContext(ctx, catalogUpsert(table, len(chunk)), args...); err != nil {
			return err
		}
	}
	return nil
}

// values returns "($1, $2), ($3, $4)" for rows rows of cols parameters:
// numbered placeholders, which SQLite and PostgreSQL both bind by
// position.
func values(rows, cols int) string {
	var b strings.Builder
	for r := range rows {
		if r > 0 {
			b.WriteString(", ")
		}
		b.WriteByte('(')
		for c := range cols {
			if c > 0 {
				b.WriteString(", ")
			}
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(r*cols + c + 1))
		}
		b.WriteByte(')')
	}
	return b.String()
}

// CatalogEntry is one stream in the catalog.
type CatalogEntry struct {
	Tenant       string
	Stream       string
	Version      int64
	EventsByType map[string]int64
	FirstTime    time.Time // UTC
	LastTime     time.Time // UTC
}

// ReadCatalog calls fn for every stream in the catalog read model, in
// tenant and stream order (one tenant's only when tenant is not empty),
// all from one snapshot. A catalog that never ran has no entries. fn's
// error stops the reading and is returned.
func ReadCatalog(ctx context.Context, s *store.Store, tenant string, fn func(CatalogEntry) error) error {
	return s.View(ctx, func(rt *store.ReadTx) error {
		ok, err := rt.TableExists(ctx, catalogTable)
		if err != nil || !ok {
			return err
		}
		rows, err := rt.QueryContext(ctx, `SELECT tenant, stream, version, events_by_type, first_time, last_time FROM `+catalogTable+`
			WHERE $1 = '' OR tenant = $1 ORDER BY tenant, stream`, tenant)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var (
				e           CatalogEntry
				counts      string
				first, last timecol.Time
			)
			if err := rows.Scan(&e.Tenant, &e.Stream, &e.Version, &counts, &first, &last); err != nil {
				return err
			}
			if e.EventsByType, err = decodeCounts(counts); err != nil {
				return err
			}
			e.FirstTime, e.LastTime = first.T, last.T
			if err := fn(e); err != nil {
				return err
			}
		}
		if err := rows.Err(); err != nil {
			return fmt.Errorf("read catalog: %w", err)
		}
		return nil
	})
}
