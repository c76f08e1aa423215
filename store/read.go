package store

import (
	"context"
	"fmt"
	"iter"
	"math"
	"sync"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/store/internal/driver"
)

// pageSize is how many rows one read query fetches. Reads page by key so
// that no read transaction stays open while the caller works through a long
// iteration (an open snapshot would keep the WAL from being checkpointed).
const pageSize = 1000

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
		next := max(opts.From, 1)
		if opts.Backward {
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
			evs, err := s.startPage(page)
			if err == nil {
				evs, err = s.reads.ReadStream(ctx, evs, tenant, stream, next, opts.Backward, lookAhead(n, opts.Limit, remaining))
				evs, err = s.endPage(ctx, page, evs, err)
			}
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
			more := len(evs) > n
			for i := range evs {
				if !yield(evs[i], nil) {
					return
				}
			}
			if !more {
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
	v, err := s.reads.StreamVersion(ctx, tenant, stream)
	switch {
	case err == nil && (!v.Found || v.Deleted == deletedSoft):
		return fmt.Errorf("stream %q (tenant %s): %w", stream, tenant, ErrNotFound)
	case err == nil && v.Deleted == deletedHard:
		return fmt.Errorf("stream %q (tenant %s): it was hard-deleted: %w", stream, tenant, ErrStreamDeleted)
	}
	return mapErr(err)
}

// lookAhead is how many rows a page read of n events fetches: one more
// when the read may go on past the page (no limit, or more than n of it
// remaining),
// so that a read whose events fill its last page to the row ends there,
// not with one more query that finds nothing. A page that has the extra
// row yields it too, and the next page starts after it.
func lookAhead(n, limit, remaining int) int {
	if limit == 0 || remaining > n {
		return n + 1
	}
	return n
}

// startPage begins a page read into page's buffer, which it keeps for
// the next page: ReadAll and ReadStream hand out copies of the events, so
// one buffer serves every page of an iteration. It returns the buffer
// emptied (the previous page's data dropped) for the driver to fill.
func (s *Store) startPage(page *[]envelope.Event) ([]envelope.Event, error) {
	if err := s.rdb.check(); err != nil {
		return nil, err
	}
	clear(*page)
	return (*page)[:0], nil
}

// endPage keeps the buffer the driver filled and opens the sealed events.
func (s *Store) endPage(ctx context.Context, page *[]envelope.Event, out []envelope.Event, err error) ([]envelope.Event, error) {
	if out != nil {
		*page = out
	}
	if err != nil {
		return nil, mapErr(err)
	}
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

// prepareReads prepares the common reads on the read pool (see
// driver.Reader).
func (s *Store) prepareReads(ctx context.Context) error {
	if err := s.rdb.check(); err != nil {
		return fmt.Errorf("store: prepare reads: %w", err)
	}
	r, err := s.ex.PrepareReader(ctx, s.rdb.DB)
	if err != nil {
		return fmt.Errorf("store: prepare reads: %w", err)
	}
	s.reads = r
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
	// Query, when not the zero Query, reads the events of Tenant (which
	// it needs) that match it, through the tag index for its items with
	// tags; Types, StreamPrefix and CorrelationID are then left empty
	// (an item names the types). Events no longer readable (truncated,
	// deleted) do not match.
	Query Query
}

// ReadAll returns events of the global log in position order, page by
// page as the caller iterates. It reads what is committed when each page
// is fetched: iterating to the end and reading on from the last position
// seen never skips an event (positions are assigned in commit order).
func (s *Store) ReadAll(ctx context.Context, opts ReadAllOptions) iter.Seq2[envelope.Event, error] {
	return func(yield func(envelope.Event, error) bool) {
		if opts.Tenant != "" {
			if err := envelope.ValidateTenant(opts.Tenant); err != nil {
				yield(envelope.Event{}, err)
				return
			}
		}
		f := &driver.LogFilter{Tenant: opts.Tenant, Types: opts.Types, StreamPrefix: opts.StreamPrefix,
			CorrelationID: opts.CorrelationID, Backward: opts.Backward}
		if !opts.Query.All() {
			if err := opts.Query.Validate(); err != nil {
				yield(envelope.Event{}, err)
				return
			}
			if opts.Tenant == "" || len(opts.Types) > 0 || opts.StreamPrefix != "" || opts.CorrelationID != "" {
				yield(envelope.Event{}, &envelope.InvalidError{Index: -1, Field: "query", Reason: "a read by query names its tenant and no other filter (types go in the query's items)"})
				return
			}
			f.Query = opts.Query.driverQuery()
		}
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
			evs, err := s.startPage(page)
			if err == nil {
				evs, err = s.reads.ReadAll(ctx, evs, f, next, lookAhead(n, opts.Limit, remaining))
				evs, err = s.endPage(ctx, page, evs, err)
			}
			if err != nil {
				yield(envelope.Event{}, fmt.Errorf("read log: %w", err))
				return
			}
			more := len(evs) > n
			for i := range evs {
				if !yield(evs[i], nil) {
					return
				}
			}
			if !more {
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
	h, err := s.ex.Head(ctx, s.rdb)
	return h, mapErr(err)
}

// StreamVersion returns a stream's version, 0 when it does not exist or
// was soft-deleted (it counts as absent), and an error matching
// ErrStreamDeleted when it was hard-deleted.
func (s *Store) StreamVersion(ctx context.Context, tenant, stream string) (int64, error) {
	if err := s.rdb.check(); err != nil {
		return 0, err
	}
	v, err := s.reads.StreamVersion(ctx, tenant, stream)
	switch {
	case err == nil && (!v.Found || v.Deleted == deletedSoft):
		return 0, nil
	case err == nil && v.Deleted == deletedHard:
		return 0, fmt.Errorf("stream %q (tenant %s): it was hard-deleted: %w", stream, tenant, ErrStreamDeleted)
	}
	return v.Version, mapErr(err)
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
	e, ok, err := s.ex.EventByID(ctx, s.rdb, tenant, id)
	if err == nil && !ok {
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
