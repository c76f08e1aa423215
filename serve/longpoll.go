package serve

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/store"
)

// pollLog reads the tenant's log as o selects (o.Limit events at most)
// and, when that finds nothing and wait is above 0, waits up to wait for
// a commit of the tenant with events that match. The wait reads nothing
// from the store: the hub reads each commit once for every waiter, from
// where it read last, and hands it only to the waiters of the tenants it
// touched, so a wait costs one read of the log however many commits
// come, and nothing at all for other tenants' commits. What a wait found
// empty is remembered (emptySpans): a later poll with the same filter
// reads on from there instead of scanning those positions again. It
// answers what it found (nothing when the wait ran out or the handler
// closes); an error is the read's, or ctx's.
func (h *Handler) pollLog(ctx context.Context, o store.ReadAllOptions, wait time.Duration) ([]envelope.Event, error) {
	if wait <= 0 || o.Backward {
		return h.readLogOnce(ctx, o)
	}
	// Subscribe before reading: every commit after the read reaches the
	// feed. A hub that stopped (the handler closes, the store was
	// closed) leaves a plain read, which answers at once.
	sub, err := h.hub.subscribe(ctx, o.Tenant, pollBuffer)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return h.readLogOnce(ctx, o)
	}
	defer h.hub.unsubscribe(sub)
	// Every event at or below covered was committed before the read
	// below starts; every later one reaches sub.
	covered := h.hub.position()
	key := spanKey(&o)
	read := o
	read.From = h.polls.skip(key, o.From)
	evs, err := h.readLogOnce(ctx, read)
	if err != nil || len(evs) > 0 {
		return evs, err
	}
	h.polls.record(key, o.From, covered)
	take := func(batch []fed) {
		for i := range batch {
			if len(evs) < o.Limit && matchLog(&o, &batch[i].Event) {
				evs = append(evs, batch[i].Event)
			}
		}
	}
	t := time.NewTimer(wait)
	defer t.Stop()
wait:
	for {
		select {
		case batch, ok := <-sub.ch:
			if !ok {
				// Dropped for falling behind, or the hub stopped: the
				// store answers (what a span says is empty stays so).
				return h.readLogOnce(ctx, read)
			}
			if take(batch); len(evs) > 0 {
				return evs, nil
			}
		case <-t.C:
			break wait
		case <-h.closing:
			break wait
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	// The wait ran out. What the hub handed out up to through is in the
	// channel: none of it matches, unless a batch still queued does.
	through := h.hub.position()
	for drained := false; !drained; {
		select {
		case batch, ok := <-sub.ch:
			if !ok {
				return h.readLogOnce(ctx, read)
			}
			if take(batch); len(evs) > 0 {
				return evs, nil
			}
		default:
			drained = true
		}
	}
	h.polls.record(key, o.From, through)
	return evs, nil
}

// readLogOnce reads the tenant's log as o selects.
func (h *Handler) readLogOnce(ctx context.Context, o store.ReadAllOptions) ([]envelope.Event, error) {
	evs := make([]envelope.Event, 0, min(o.Limit, 128))
	for e, err := range h.hub.read(ctx, o) {
		if err != nil {
			return nil, err
		}
		evs = append(evs, e)
	}
	return evs, nil
}

// maxEmptySpans caps the filters whose empty spans a handler remembers;
// maxSpanKey the length of a filter remembered.
const (
	maxEmptySpans = 1024
	maxSpanKey    = 4096
)

// emptySpans remembers, for each filter of a long poll, positions of the
// log that hold none of its events: a read from within the span can
// start after it. A span stays true: events are added above the head
// only (positions in commit order, holes never fill), and a removal adds
// no match.
type emptySpans struct {
	mu    sync.Mutex
	spans map[string]span
}

// span is the positions from..through.
type span struct{ from, through int64 }

// spanKey is the filter of o, "" when it is not remembered.
func spanKey(o *store.ReadAllOptions) string {
	if !o.Query.All() {
		// A query's matches can go away (a forget erases tags, a
		// truncate hides events) but never appear below the head; it
		// is simply not remembered.
		return ""
	}
	var b strings.Builder
	for _, part := range append([]string{o.Tenant, o.StreamPrefix, o.CorrelationID}, o.Types...) {
		b.WriteString(part)
		b.WriteByte(0)
		if b.Len() > maxSpanKey {
			return ""
		}
	}
	return b.String()
}

// skip is where a read of key's events from from on may start.
func (e *emptySpans) skip(key string, from int64) int64 {
	if key == "" {
		return from
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if s, ok := e.spans[key]; ok && s.from <= max(from, 1) && from <= s.through {
		return s.through + 1
	}
	return from
}

// record remembers that from..through holds none of key's events.
func (e *emptySpans) record(key string, from, through int64) {
	from = max(from, 1)
	if key == "" || through < from {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if s, ok := e.spans[key]; ok && s.from <= through+1 && from <= s.through+1 {
		from, through = min(from, s.from), max(through, s.through)
	} else if !ok && len(e.spans) >= maxEmptySpans {
		for k := range e.spans { // any one: the cache stays bounded
			delete(e.spans, k)
			break
		}
	}
	if e.spans == nil {
		e.spans = make(map[string]span)
	}
	e.spans[key] = span{from, through}
}
