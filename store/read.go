package store

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"math"
	"strings"
	"sync"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/internal/timecol"
)

const selectEvents = `SELECT position, tenant, stream_id, version, event_id, type, source, time,
	content_type, data, ` + selectAttrs + ` FROM events`

// selectAttrs reads the four attributes most events leave empty
// (dataschema, correlationid, causationid and the other extensions) as
// one column: NULL when all four are empty, else the four joined by NUL
// bytes (extensions empty when NULL). Every column a read fetches costs
// the driver a lock of the connection and a conversion, so one column in
// place of four makes a read of the log about a fifth faster. A NUL
// separates them unambiguously: envelope refuses control characters in
// string attributes, and the extensions' JSON escapes them.
const selectAttrs = `CASE WHEN data_schema = '' AND correlation_id = '' AND causation_id = '' AND extensions IS NULL THEN NULL
	ELSE data_schema || char(0) || correlation_id || char(0) || causation_id || char(0) || coalesce(extensions, '') END`

// pageSize is how many rows one read query fetches. Reads page by key so
// that no read transaction stays open while the caller works through a long
// iteration (an open snapshot would keep the WAL from being checkpointed).
const pageSize = 1000

type scanner interface{ Scan(dest ...any) error }

func scanEvent(r scanner) (envelope.Event, error) {
	return newEventScanner().scan(r)
}

// selectStreamEvents is selectEvents without the tenant and stream
// columns, for reads of one stream, which know them: two strings fewer
// to copy out of SQLite and allocate per row.
const selectStreamEvents = `SELECT position, version, event_id, type, source, time,
	content_type, data, ` + selectAttrs + ` FROM events`

// eventScanner scans rows of selectEvents (or selectStreamEvents) into
// events. It builds its list of destinations once, for every row of a
// query: a Scan with a new list of pointers into a new event allocates
// both on every row.
type eventScanner struct {
	e     envelope.Event
	t     timecol.Time
	attrs []byte // selectAttrs
	dest  []any
	// tenant and stream, when known, fill the events of
	// selectStreamEvents, which does not read them.
	known          bool
	tenant, stream string
}

func newEventScanner() *eventScanner {
	s := &eventScanner{}
	e := &s.e
	s.dest = []any{&e.Position, &e.Tenant, &e.Stream, &e.StreamVersion, &e.ID, &e.Type, &e.Source, &s.t,
		&e.DataContentType, &e.Data, &s.attrs}
	return s
}

// newStreamEventScanner scans rows of selectStreamEvents of one stream.
func newStreamEventScanner(tenant, stream string) *eventScanner {
	s := &eventScanner{known: true, tenant: tenant, stream: stream}
	e := &s.e
	s.dest = []any{&e.Position, &e.StreamVersion, &e.ID, &e.Type, &e.Source, &s.t,
		&e.DataContentType, &e.Data, &s.attrs}
	return s
}

func (s *eventScanner) scan(r scanner) (envelope.Event, error) {
	s.e, s.attrs = envelope.Event{}, nil
	if err := r.Scan(s.dest...); err != nil {
		return envelope.Event{}, err
	}
	e := s.e
	if s.known {
		e.Tenant, e.Stream = s.tenant, s.stream
	}
	e.Time, e.TimeSet = s.t.T, s.t.T.IsZero()
	if s.attrs != nil {
		if err := splitAttrs(s.attrs, &e); err != nil {
			return e, fmt.Errorf("event at position %d: %w", e.Position, err)
		}
	}
	return e, nil
}

// splitAttrs fills e's dataschema, correlationid, causationid and other
// extensions from a non-NULL selectAttrs column.
func splitAttrs(b []byte, e *envelope.Event) error {
	f := bytes.SplitN(b, []byte{0}, 4)
	if len(f) != 4 {
		return fmt.Errorf("attributes column has %d parts, want 4", len(f))
	}
	e.DataSchema, e.CorrelationID, e.CausationID = string(f[0]), string(f[1]), string(f[2])
	if len(f[3]) > 0 {
		if err := decodeExtensions(f[3], e); err != nil {
			return fmt.Errorf("extensions: %w", err)
		}
	}
	return nil
}

// decodeExtensions restores the extension values' CloudEvents types:
// JSON numbers are int32 (validation only admits those), the rest as JSON.
func decodeExtensions(b []byte, e *envelope.Event) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	e.Extensions = make(map[string]any, len(raw))
	for k, v := range raw {
		var x any
		d := json.NewDecoder(strings.NewReader(string(v)))
		d.UseNumber()
		if err := d.Decode(&x); err != nil {
			return err
		}
		if n, ok := x.(json.Number); ok {
			i, err := n.Int64()
			if err != nil {
				return err
			}
			x = int32(i)
		}
		e.Extensions[k] = x
	}
	return nil
}

// ReadStreamOptions selects events of one stream.
type ReadStreamOptions struct {
	// From is the first version to read, inclusive. 0 means the first
	// event (forward) or the newest (backward).
	From int64
	// Backward reads from From towards version 1.
	Backward bool
	// Limit caps the number of events; 0 means no limit.
	Limit int
}

// ReadStream returns the events of one tenant's stream in version order
// (or reverse order with Backward). It reads page by page as the caller
// iterates. When the stream does not exist, the first item is an error
// matching ErrNotFound.
func (s *Store) ReadStream(ctx context.Context, tenant, stream string, opts ReadStreamOptions) iter.Seq2[envelope.Event, error] {
	return func(yield func(envelope.Event, error) bool) {
		if err := envelope.ValidateTenant(tenant); err != nil {
			yield(envelope.Event{}, err)
			return
		}
		if err := envelope.ValidateStream(stream); err != nil {
			yield(envelope.Event{}, err)
			return
		}
		st := s.reads.streamForward
		next := max(opts.From, 1)
		if opts.Backward {
			st = s.reads.streamBackward
			next = opts.From
			if next <= 0 {
				next = envelope.MaxStreamVersion
			}
		}
		remaining := opts.Limit
		first := true
		page := getPage()
		defer putPage(page)
		for {
			n := pageSize
			if opts.Limit > 0 && remaining < n {
				n = remaining
			}
			if n == 0 {
				return
			}
			evs, err := s.queryEventsWith(ctx, page, newStreamEventScanner(tenant, stream), st, "", tenant, stream, next, n)
			if err != nil {
				yield(envelope.Event{}, fmt.Errorf("read stream %q: %w", stream, err))
				return
			}
			if first && len(evs) == 0 {
				if err := s.streamExists(ctx, tenant, stream); err != nil {
					yield(envelope.Event{}, err)
				}
				return
			}
			first = false
			for _, e := range evs {
				if !yield(e, nil) {
					return
				}
			}
			if len(evs) < n {
				return
			}
			remaining -= len(evs)
			last := evs[len(evs)-1].StreamVersion
			if opts.Backward {
				next = last - 1
				if next < 1 {
					return
				}
			} else {
				next = last + 1
			}
		}
	}
}

func (s *Store) streamExists(ctx context.Context, tenant, stream string) error {
	if err := s.rdb.check(); err != nil {
		return err
	}
	var v, deleted int64
	err := s.reads.streamVersion.QueryRowContext(ctx, tenant, stream).Scan(&v, &deleted)
	switch {
	case errors.Is(err, sql.ErrNoRows), err == nil && deleted == deletedSoft:
		return fmt.Errorf("stream %q (tenant %s): %w", stream, tenant, ErrNotFound)
	case err == nil && deleted == deletedHard:
		return fmt.Errorf("stream %q (tenant %s): it was hard-deleted: %w", stream, tenant, ErrStreamDeleted)
	}
	return mapErr(err)
}

// queryEvents runs a page query, the prepared st or else q, and returns
// its events in page's buffer, which it keeps for the next page: ReadAll
// and ReadStream hand out copies of the events, so one buffer serves
// every page of an iteration.
func (s *Store) queryEvents(ctx context.Context, page *[]envelope.Event, st *sql.Stmt, q string, args ...any) ([]envelope.Event, error) {
	return s.queryEventsWith(ctx, page, newEventScanner(), st, q, args...)
}

// queryEventsWith is queryEvents with the scanner for the query's
// columns.
func (s *Store) queryEventsWith(ctx context.Context, page *[]envelope.Event, sc *eventScanner, st *sql.Stmt, q string, args ...any) ([]envelope.Event, error) {
	clear(*page) // drop the previous page's data
	var (
		rows *sql.Rows
		err  error
	)
	if err := s.rdb.check(); err != nil {
		return nil, err
	}
	if st != nil {
		rows, err = st.QueryContext(ctx, args...)
	} else {
		rows, err = s.rdb.QueryContext(ctx, q, args...)
	}
	if err != nil {
		return nil, mapErr(err)
	}
	defer rows.Close()
	out := (*page)[:0]
	defer func() { *page = out }()
	for rows.Next() {
		e, err := sc.scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, mapErr(err)
	}
	rows.Close() // before the keys are looked up, on the same pool
	if err := s.keys.openEvents(ctx, s.rdb, true, out); err != nil {
		return nil, err
	}
	return out, nil
}

// pagePool keeps page buffers between reads: a read of a 1,000-event
// stream that grew a buffer of its own allocated and copied about 0.5 MB.
// A buffer in the pool holds no events (putPage clears it), so it keeps
// no event data alive.
var pagePool = sync.Pool{New: func() any { return new([]envelope.Event) }}

func getPage() *[]envelope.Event { return pagePool.Get().(*[]envelope.Event) }

func putPage(p *[]envelope.Event) {
	clear(*p)
	*p = (*p)[:0]
	pagePool.Put(p)
}

// readStmts are the common reads, prepared once on the read pool.
type readStmts struct {
	streamForward  *sql.Stmt
	streamBackward *sql.Stmt
	all            *sql.Stmt
	allTenant      *sql.Stmt
	streamVersion  *sql.Stmt
}

func (r *readStmts) list() []*sql.Stmt {
	return []*sql.Stmt{r.streamForward, r.streamBackward, r.all, r.allTenant, r.streamVersion}
}

func (s *Store) prepareReads(ctx context.Context) error {
	var err error
	prep := func(q string) *sql.Stmt {
		if err != nil {
			return nil
		}
		var st *sql.Stmt
		st, err = s.rdb.PrepareContext(ctx, q)
		return st
	}
	s.reads = readStmts{
		// Reads start at the stream's first retained version (a truncate
		// or a delete moved it); a stream without a row has none.
		streamForward: prep(selectStreamEvents + ` WHERE tenant = ?1 AND stream_id = ?2
			AND version >= max(?3, (SELECT first_version FROM streams WHERE tenant = ?1 AND stream_id = ?2)) ORDER BY version LIMIT ?4`),
		streamBackward: prep(selectStreamEvents + ` WHERE tenant = ?1 AND stream_id = ?2 AND version <= ?3
			AND version >= (SELECT first_version FROM streams WHERE tenant = ?1 AND stream_id = ?2) ORDER BY version DESC LIMIT ?4`),
		all:           prep(selectEvents + ` WHERE position >= ? ORDER BY position LIMIT ?`),
		allTenant:     prep(selectEvents + ` WHERE position >= ? AND tenant = ? ORDER BY position LIMIT ?`),
		streamVersion: prep(streamVersionSQL),
	}
	if err != nil {
		return fmt.Errorf("store: prepare reads: %w", err)
	}
	return nil
}

// ReadAllOptions selects events of the global log.
type ReadAllOptions struct {
	// From is the first position to read, inclusive; 0 means the start.
	From int64
	// Limit caps the number of events; 0 means no limit.
	Limit int
	// Tenant, when set, reads one tenant's events only. Relays,
	// projections and reconciliation read every tenant; user-facing reads
	// pass one.
	Tenant string
	// Types, when set, reads only events of these types.
	Types []string
	// StreamPrefix, when set, reads only events of streams whose id starts
	// with it.
	StreamPrefix string
	// CorrelationID, when set, reads only events with this correlationid.
	// No index serves it: the read scans the log from From.
	CorrelationID string
	// Backward reads from the newest event to the oldest; From is then
	// the newest position to read (0: the head).
	Backward bool
}

// ReadAll returns events of the global log in position order, page by
// page as the caller iterates. It reads what is committed when each page
// is fetched: iterating to the end and reading on from the last position
// seen never skips an event (positions are assigned in commit order).
func (s *Store) ReadAll(ctx context.Context, opts ReadAllOptions) iter.Seq2[envelope.Event, error] {
	return func(yield func(envelope.Event, error) bool) {
		var where []string
		var args []any
		cmp, order := "position >= ?", " ORDER BY position LIMIT ?"
		if opts.Backward {
			cmp, order = "position <= ?", " ORDER BY position DESC LIMIT ?"
		}
		where = append(where, cmp)
		args = append(args, nil) // the position, set per page
		if opts.Tenant != "" {
			if err := envelope.ValidateTenant(opts.Tenant); err != nil {
				yield(envelope.Event{}, err)
				return
			}
			where = append(where, "tenant = ?")
			args = append(args, opts.Tenant)
		}
		if len(opts.Types) > 0 {
			where = append(where, "type IN (?"+strings.Repeat(", ?", len(opts.Types)-1)+")")
			for _, t := range opts.Types {
				args = append(args, t)
			}
		}
		if opts.StreamPrefix != "" {
			// substr and length count characters alike, on valid UTF-8.
			where = append(where, "substr(stream_id, 1, length(?)) = ?")
			args = append(args, opts.StreamPrefix, opts.StreamPrefix)
		}
		if opts.CorrelationID != "" {
			where = append(where, "correlation_id = ?")
			args = append(args, opts.CorrelationID)
		}
		q := selectEvents + " WHERE " + strings.Join(where, " AND ") + order
		var st *sql.Stmt // prepared forms of the common queries
		switch {
		case len(opts.Types) > 0, opts.StreamPrefix != "", opts.CorrelationID != "", opts.Backward:
		case opts.Tenant != "":
			st = s.reads.allTenant
		default:
			st = s.reads.all
		}
		args = append(args, nil) // the page size
		next := max(opts.From, 1)
		if opts.Backward && opts.From <= 0 {
			next = math.MaxInt64
		}
		remaining := opts.Limit
		page := getPage()
		defer putPage(page)
		for {
			n := pageSize
			if opts.Limit > 0 && remaining < n {
				n = remaining
			}
			if n == 0 {
				return
			}
			args[0], args[len(args)-1] = next, n
			evs, err := s.queryEvents(ctx, page, st, q, args...)
			if err != nil {
				yield(envelope.Event{}, fmt.Errorf("read log: %w", err))
				return
			}
			for _, e := range evs {
				if !yield(e, nil) {
					return
				}
			}
			if len(evs) < n {
				return
			}
			remaining -= len(evs)
			next = evs[len(evs)-1].Position + 1
			if opts.Backward {
				next = evs[len(evs)-1].Position - 1
			}
		}
	}
}

// Head returns the newest position in the log, 0 when it is empty.
func (s *Store) Head(ctx context.Context) (int64, error) {
	var h int64
	err := s.rdb.QueryRowContext(ctx, `SELECT COALESCE(MAX(position), 0) FROM events`).Scan(&h)
	return h, mapErr(err)
}

// StreamVersion returns a stream's version, 0 when it does not exist or
// was soft-deleted (it counts as absent), and an error matching
// ErrStreamDeleted when it was hard-deleted.
func (s *Store) StreamVersion(ctx context.Context, tenant, stream string) (int64, error) {
	if err := s.rdb.check(); err != nil {
		return 0, err
	}
	var v, deleted int64
	err := s.reads.streamVersion.QueryRowContext(ctx, tenant, stream).Scan(&v, &deleted)
	switch {
	case errors.Is(err, sql.ErrNoRows), err == nil && deleted == deletedSoft:
		return 0, nil
	case err == nil && deleted == deletedHard:
		return 0, fmt.Errorf("stream %q (tenant %s): it was hard-deleted: %w", stream, tenant, ErrStreamDeleted)
	}
	return v, mapErr(err)
}

// EventByID reads the tenant's event with this CloudEvents id. An unknown
// id is ErrNotFound.
func (s *Store) EventByID(ctx context.Context, tenant, id string) (envelope.Event, error) {
	if err := envelope.ValidateTenant(tenant); err != nil {
		return envelope.Event{}, err
	}
	if err := s.rdb.check(); err != nil {
		return envelope.Event{}, err
	}
	e, err := scanEvent(s.rdb.QueryRowContext(ctx, selectEvents+` WHERE tenant = ? AND event_id = ?`, tenant, id))
	if errors.Is(err, sql.ErrNoRows) {
		return envelope.Event{}, fmt.Errorf("event %q of tenant %q: %w", id, tenant, ErrNotFound)
	}
	if err != nil {
		return envelope.Event{}, fmt.Errorf("event %q of tenant %q: %w", id, tenant, mapErr(err))
	}
	evs := []envelope.Event{e}
	if err := s.keys.openEvents(ctx, s.rdb, true, evs); err != nil {
		return envelope.Event{}, fmt.Errorf("event %q of tenant %q: %w", id, tenant, err)
	}
	return evs[0], nil
}
