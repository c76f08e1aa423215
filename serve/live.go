package serve

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
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
	sse    bool
}

// serveLive answers a live read: the history from the cursor, then (SSE)
// caught-up, then each new commit as it is seen, with heartbeats, until
// the client goes, the handler closes, or a write does not complete
// within WriteTimeout (a reader that cannot keep up is dropped; it
// resumes with Last-Event-ID). Nothing is buffered per reader: each round
// reads from the store what the reader has not seen, at its own pace.
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
	resume := lr.stream != "" && after >= 0 // skip the stream's events at or before after
	caughtUp := false
	tick := time.NewTicker(hb)
	defer tick.Stop()
	for {
		changed := h.s.Changed() // before reading: no commit goes unseen
		var evs func(yield func(envelope.Event, error) bool)
		if lr.stream != "" {
			evs = h.s.ReadStream(ctx, lr.tenant, lr.stream, store.ReadStreamOptions{From: next})
		} else {
			evs = h.s.ReadAll(ctx, store.ReadAllOptions{From: next, Tenant: lr.tenant, Types: lr.types})
		}
		n := 0
		for e, err := range evs {
			if errors.Is(err, store.ErrNotFound) {
				break // a stream that does not exist yet: wait for it
			}
			if err != nil {
				if ctx.Err() == nil {
					fatal(err)
				}
				return
			}
			if lr.stream != "" {
				next = e.StreamVersion + 1
			} else {
				next = e.Position + 1
			}
			if resume && e.Position <= after {
				continue
			}
			last = e.Position
			if lr.sse {
				buf = append(buf, "id: "...)
				buf = strconv.AppendInt(buf, e.Position, 10)
				buf = append(buf, "\ndata: "...)
				buf = append(e.AppendJSON(buf), "\n\n"...)
			} else {
				buf = append(e.AppendJSON(buf), '\n')
			}
			if n++; n%64 == 0 && !send() {
				return
			}
		}
		resume = false
		if !caughtUp && lr.sse {
			buf = append(buf, `event: caught-up`+"\n"+`data: {"position":"`...)
			buf = strconv.AppendInt(buf, last, 10)
			buf = append(buf, "\"}\n\n"...)
		}
		caughtUp = true
		if !send() {
			return
		}
		for wait := true; wait; {
			select {
			case <-changed:
				wait = false
			case <-tick.C:
				if lr.sse {
					buf = append(buf, ": hb\n\n"...)
				} else {
					buf = append(buf, '\n')
				}
				if !send() {
					return
				}
			case <-ctx.Done():
				return
			case <-h.closing:
				return
			}
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
