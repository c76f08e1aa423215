package serve

import (
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/store"
)

// liveRead is a live read of a stream or of a tenant's log.
type liveRead struct {
	tenant string
	stream string   // "" for the log
	from   int64    // first version (stream) or position (log), inclusive
	types  []string // the log's type filter
	// streamPrefix and correlationID are the log's other filters.
	streamPrefix, correlationID string
	// query is the log's query (tag= or POST .../query), the zero
	// Query for none.
	query store.Query
	sse   bool
}

// serveLive answers a live read: the history from the cursor (read from
// the store), then (SSE) caught-up, then each new commit from the hub's
// feed, with heartbeats, until the client goes or the handler closes. A
// reader whose feed fills (hubBuffer batches waiting) or whose write does
// not complete within WriteTimeout is dropped: it resumes with
// Last-Event-ID, and nothing is buffered for it without bound.
func (h *Handler) serveLive(w http.ResponseWriter, r *http.Request, lr liveRead) {
	hb := h.opts.Heartbeat
	if s := r.URL.Query().Get("heartbeat"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d < 100*time.Millisecond || d > time.Hour {
			p := problemf("invalid-parameter", "heartbeat=%q: must be a duration from 100ms to 1h, such as 15s", s)
			p.Field, p.Reason = "heartbeat", "a duration from 100ms to 1h"
			writeProblem(w, p)
			return
		}
		hb = d
	}
	after := int64(-1) // Last-Event-ID: an exclusive position, which beats from
	if s := r.Header.Get("Last-Event-ID"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 0 {
			p := problemf("invalid-parameter", "Last-Event-ID %q: must be a position, as the id: lines carry", s)
			p.Field, p.Reason = "Last-Event-ID", "must be a position"
			writeProblem(w, p)
			return
		}
		after = n
	}
	if !h.startLive() {
		writeProblem(w, problemf("busy", "the server is stopping: reconnect to another").with("Retry-After", "1"))
		return
	}
	defer h.live.Done()

	ctx := r.Context()
	rc := http.NewResponseController(w)
	hd := w.Header()
	if lr.sse {
		hd.Set("Content-Type", ctSSE)
	} else {
		hd.Set("Content-Type", ctNDJSON)
	}
	hd.Set("Cache-Control", "no-cache")
	hd.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)

	var buf []byte
	send := func() bool {
		if len(buf) == 0 {
			return true
		}
		_ = rc.SetWriteDeadline(time.Now().Add(h.opts.WriteTimeout))
		_, err := w.Write(buf)
		if err == nil {
			err = rc.Flush()
		}
		buf = buf[:0]
		if err != nil {
			h.log.Debug("live reader dropped", "tenant", lr.tenant, "error", err)
			return false
		}
		return true
	}
	fatal := func(err error) {
		if lr.sse {
			p := problemFor(err, lr.tenant, lr.stream, nil)
			b, _ := json.Marshal(p)
			buf = append(buf, "event: error\ndata: "...)
			buf = append(append(buf, b...), "\n\n"...)
			send()
		}
	}
	if lr.sse {
		buf = append(buf, "retry: 1000\n\n"...)
	}
	last := max(after, 0) // the newest position sent (or resumed from)
	next := lr.from       // the stream's next version, or the log's next position
	if lr.stream == "" && after >= 0 {
		next = after + 1
	}
	// Subscribe before reading the history: every commit after this point
	// reaches the subscription, so history plus feed leave no gap; the
	// feed's events already sent from history are skipped by position.
	sub, err := h.hub.subscribe(ctx, lr.tenant, hubBuffer)
	if err != nil {
		if ctx.Err() == nil && !errors.Is(err, errHubStopped) {
			fatal(err)
		}
		return
	}
	defer h.hub.unsubscribe(sub)
	logOpts := store.ReadAllOptions{From: lr.from, Tenant: lr.tenant, Types: lr.types,
		StreamPrefix: lr.streamPrefix, CorrelationID: lr.correlationID, Query: lr.query}
	match := func(e *envelope.Event) bool {
		if e.Tenant != lr.tenant || e.Position <= last {
			return false
		}
		if lr.stream != "" {
			return e.Stream == lr.stream && e.StreamVersion >= lr.from
		}
		return matchLog(&logOpts, e)
	}
	// frame adds one event; js is its JSON when already encoded.
	frame := func(e *envelope.Event, js []byte) {
		last = e.Position
		if lr.sse {
			buf = append(buf, "id: "...)
			buf = strconv.AppendInt(buf, e.Position, 10)
			buf = append(buf, "\ndata: "...)
		}
		if js != nil {
			buf = append(buf, js...)
		} else {
			buf = e.AppendJSON(buf)
		}
		if lr.sse {
			buf = append(buf, "\n\n"...)
		} else {
			buf = append(buf, '\n')
		}
	}

	// The history, from the store.
	var history func(yield func(envelope.Event, error) bool)
	if lr.stream != "" {
		history = h.s.ReadStream(ctx, lr.tenant, lr.stream, store.ReadStreamOptions{From: next})
	} else {
		o := logOpts
		o.From = next
		history = h.hub.read(ctx, o)
	}
	n := 0
	for e, err := range history {
		if errors.Is(err, store.ErrNotFound) {
			break // a stream that does not exist yet: wait for it
		}
		if err != nil {
			if ctx.Err() == nil {
				fatal(err)
			}
			return
		}
		if !match(&e) {
			continue // at or before Last-Event-ID
		}
		frame(&e, nil)
		if n++; n%64 == 0 && !send() {
			return
		}
	}
	if lr.sse {
		buf = append(buf, `event: caught-up`+"\n"+`data: {"position":"`...)
		buf = strconv.AppendInt(buf, last, 10)
		buf = append(buf, "\"}\n\n"...)
	}
	if !send() {
		return
	}

	// Live, from the hub's feed.
	tick := time.NewTicker(hb)
	defer tick.Stop()
	for {
		select {
		case batch, ok := <-sub.ch:
			if !ok {
				if h.hub.wasDropped(sub) {
					h.log.Debug("live reader dropped", "tenant", lr.tenant, "reason", "it fell behind")
				} else if herr := h.hub.error(); herr != nil && !errors.Is(herr, errHubStopped) {
					fatal(herr)
				}
				return
			}
			for i := range batch {
				if match(&batch[i].Event) {
					frame(&batch[i].Event, batch[i].json)
				}
			}
		case <-tick.C:
			if lr.sse {
				buf = append(buf, ": hb\n\n"...)
			} else {
				buf = append(buf, '\n')
			}
		case <-ctx.Done():
			return
		case <-h.closing:
			return
		}
		if !send() {
			return
		}
	}
}

// startLive registers a live reader unless the handler is closing.
func (h *Handler) startLive() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return false
	}
	h.live.Add(1)
	return true
}

// matchLog reports whether e is one of the events a read of the log with
// o selects (forward, from o.From on).
func matchLog(o *store.ReadAllOptions, e *envelope.Event) bool {
	return e.Tenant == o.Tenant && e.Position >= o.From &&
		(len(o.Types) == 0 || slices.Contains(o.Types, e.Type)) &&
		strings.HasPrefix(e.Stream, o.StreamPrefix) &&
		(o.CorrelationID == "" || e.CorrelationID == o.CorrelationID) &&
		o.Query.Matches(*e)
}
