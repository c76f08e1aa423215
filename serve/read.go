package serve

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/store"
)

// Response forms of a read.
const (
	formBatch = iota
	formNDJSON
	formSSE
)

// negotiate picks a read's form from Accept: the first of text/event-stream
// and application/x-ndjson it names, else a batch. Never 406.
func negotiate(r *http.Request) int {
	for _, part := range strings.Split(strings.Join(r.Header.Values("Accept"), ","), ",") {
		mt, _, _ := strings.Cut(part, ";")
		switch strings.ToLower(strings.TrimSpace(mt)) {
		case ctSSE:
			return formSSE
		case ctNDJSON:
			return formNDJSON
		}
	}
	return formBatch
}

// wantsLive says whether a read is live: text/event-stream, or ndjson
// with follow=true.
func wantsLive(r *http.Request, form int) (bool, *Problem) {
	f := r.URL.Query().Get("follow")
	if f != "" && f != "true" && f != "false" {
		p := problemf("invalid-parameter", "follow=%q: must be true or false", f)
		p.Field, p.Reason = "follow", "must be true or false"
		return false, p
	}
	return form == formSSE || (form == formNDJSON && f == "true"), nil
}

// notModified answers If-None-Match on a GET: a list of tags compared
// weakly, or *.
func notModified(r *http.Request, version int64) bool {
	want := strconv.FormatInt(version, 10)
	for _, v := range r.Header.Values("If-None-Match") {
		for _, part := range strings.Split(v, ",") {
			part = strings.TrimSpace(part)
			if part == "*" {
				return true
			}
			if tag, _, ok := parseTag(part); ok && tag == want {
				return true
			}
		}
	}
	return false
}

// writeEvents writes a finite read as a batch or ndjson.
func writeEvents(w http.ResponseWriter, form int, evs []envelope.Event) {
	var b []byte
	if form == formNDJSON {
		w.Header().Set("Content-Type", ctNDJSON)
		for i := range evs {
			b = append(evs[i].AppendJSON(b), '\n')
		}
	} else {
		w.Header().Set("Content-Type", ctBatch)
		b = append(b, '[')
		for i := range evs {
			if i > 0 {
				b = append(b, ',')
			}
			b = evs[i].AppendJSON(b)
		}
		b = append(b, "]\n"...)
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(b)
}

// setNext adds Link: <...>; rel="next" for the page after this one.
func setNext(w http.ResponseWriter, r *http.Request, set map[string]string) {
	q := r.URL.Query()
	for k, v := range set {
		q.Set(k, v)
	}
	q.Del("wait")
	w.Header().Set("Link", "<"+r.URL.EscapedPath()+"?"+q.Encode()+`>; rel="next"`)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		writeProblem(w, problemf("internal", "%v", err))
		return
	}
	w.Header().Set("Content-Type", ctJSON)
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

// streamJSON is a stream's description.
type streamJSON struct {
	Tenant        string `json:"tenant"`
	Stream        string `json:"stream"`
	Version       int64  `json:"version"`
	FirstPosition int64  `json:"first_position,string"`
	LastPosition  int64  `json:"last_position,string"`
	Events        int64  `json:"events"`
	Updated       string `json:"updated"`
}

func toStreamJSON(si store.StreamInfo) streamJSON {
	return streamJSON{Tenant: si.Tenant, Stream: si.Stream, Version: si.Version, FirstPosition: si.FirstPosition,
		LastPosition: si.LastPosition, Events: si.Events, Updated: si.UpdatedAt.UTC().Format(time.RFC3339Nano)}
}

func streamNotFound(tenant, stream string) *Problem {
	p := problemf("stream-not-found", "stream %q of tenant %q does not exist: list the streams at /v1/tenants/%s/streams", stream, tenant, escapeSegment(tenant))
	p.Tenant, p.Stream = tenant, stream
	return p
}

// streamInfo answers GET and HEAD .../streams/{stream}.
func (h *Handler) streamInfo(w http.ResponseWriter, r *http.Request, tenant, stream string) {
	// The stream itself comes first among the ids it prefixes.
	var found *store.StreamInfo
	for si, err := range h.s.Streams(r.Context(), tenant, store.StreamsOptions{Prefix: stream, Limit: 1}) {
		if err != nil {
			writeProblem(w, problemFor(err, tenant, stream, nil))
			return
		}
		if si.Stream == stream {
			found = &si
		}
	}
	if found == nil {
		// A hard-deleted stream is listed no more than a missing one, but
		// answers 410.
		if _, err := h.s.StreamVersion(r.Context(), tenant, stream); err != nil {
			writeProblem(w, problemFor(err, tenant, stream, nil))
			return
		}
		writeProblem(w, streamNotFound(tenant, stream))
		return
	}
	w.Header().Set("ETag", etag(found.Version))
	if notModified(r, found.Version) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	writeJSON(w, http.StatusOK, toStreamJSON(*found))
}

// readStream answers GET .../streams/{stream}/events.
func (h *Handler) readStream(w http.ResponseWriter, r *http.Request, tenant, stream string) {
	q := r.URL.Query()
	from, p := queryInt(q, "from", 0, 0)
	if p != nil {
		writeProblem(w, p)
		return
	}
	limit, p := queryLimit(q)
	if p != nil {
		writeProblem(w, p)
		return
	}
	backward, p := queryDirection(q)
	if p != nil {
		writeProblem(w, p)
		return
	}
	form := negotiate(r)
	live, p := wantsLive(r, form)
	if p != nil {
		writeProblem(w, p)
		return
	}
	if live {
		if backward {
			p := problemf("invalid-parameter", "a live read goes forward: leave direction=backward out")
			p.Field, p.Reason = "direction", "live reads go forward"
			writeProblem(w, p)
			return
		}
		h.serveLive(w, r, liveRead{tenant: tenant, stream: stream, from: from, sse: form == formSSE})
		return
	}
	ctx := r.Context()
	v, err := h.s.StreamVersion(ctx, tenant, stream)
	if err != nil {
		writeProblem(w, problemFor(err, tenant, stream, nil))
		return
	}
	if v == 0 {
		writeProblem(w, streamNotFound(tenant, stream))
		return
	}
	w.Header().Set("ETag", etag(v))
	if notModified(r, v) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	evs := make([]envelope.Event, 0, min(limit+1, 128))
	for e, err := range h.s.ReadStream(ctx, tenant, stream, store.ReadStreamOptions{From: from, Backward: backward, Limit: limit + 1}) {
		if err != nil {
			if errors.Is(err, store.ErrNotFound) {
				break
			}
			writeProblem(w, problemFor(err, tenant, stream, nil))
			return
		}
		evs = append(evs, e)
	}
	if len(evs) > limit {
		evs = evs[:limit]
		next := evs[len(evs)-1].StreamVersion + 1
		if backward {
			next = evs[len(evs)-1].StreamVersion - 1
		}
		setNext(w, r, map[string]string{"from": strconv.FormatInt(next, 10)})
	}
	writeEvents(w, form, evs)
}

// readEvent answers GET .../streams/{stream}/events/{version}.
func (h *Handler) readEvent(w http.ResponseWriter, r *http.Request, tenant, stream, version string) {
	v, err := strconv.ParseInt(version, 10, 64)
	notFound := func() {
		p := problemf("event-not-found", "stream %q of tenant %q has no version %s", stream, tenant, version)
		p.Tenant, p.Stream = tenant, stream
		writeProblem(w, p)
	}
	if err != nil || v < 1 {
		notFound()
		return
	}
	for e, err := range h.s.ReadStream(r.Context(), tenant, stream, store.ReadStreamOptions{From: v, Limit: 1}) {
		if errors.Is(err, store.ErrNotFound) {
			break
		}
		if err != nil {
			writeProblem(w, problemFor(err, tenant, stream, nil))
			return
		}
		if e.StreamVersion != v {
			break
		}
		b := append(e.AppendJSON(nil), '\n')
		w.Header().Set("Content-Type", ctStructured)
		w.Header().Set("Content-Length", strconv.Itoa(len(b)))
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(b)
		return
	}
	notFound()
}

// MaxWait is the longest long poll of a log read (wait=S).
const MaxWait = 30

// readLog answers GET .../events: the tenant's log in position order.
func (h *Handler) readLog(w http.ResponseWriter, r *http.Request, tenant string) {
	q := r.URL.Query()
	from, p := queryInt(q, "from", 0, 0)
	if p == nil {
		var limit int
		limit, p = queryLimit(q)
		if p == nil {
			var wait int64
			wait, p = queryInt(q, "wait", 0, MaxWait)
			if p == nil {
				h.readLogPage(w, r, tenant, from, limit, time.Duration(wait)*time.Second, nil)
				return
			}
		}
	}
	writeProblem(w, p)
}

// readLogPage reads the log of the tenant; query, when not nil, is a
// query read's (POST .../query), else the parameters say (tag= makes
// one).
func (h *Handler) readLogPage(w http.ResponseWriter, r *http.Request, tenant string, from int64, limit int, wait time.Duration, query *store.Query) {
	form := negotiate(r)
	live, p := wantsLive(r, form)
	if p != nil {
		writeProblem(w, p)
		return
	}
	q := r.URL.Query()
	types := q["type"]
	prefix, corr := q.Get("stream_prefix"), q.Get("correlationid")
	var sq store.Query
	if query != nil {
		sq, types = *query, nil
	} else {
		var byTag bool
		if sq, byTag, p = paramQuery(q); p != nil {
			p.Tenant = tenant
			writeProblem(w, p)
			return
		}
		if byTag {
			types = nil // the item's types
		}
	}
	backward, p := queryDirection(q)
	if p != nil {
		writeProblem(w, p)
		return
	}
	if backward && (live || wait > 0) {
		p := problemf("invalid-parameter", "a live read or a long poll goes forward: leave direction=backward out")
		p.Field, p.Reason = "direction", "live reads and long polls go forward"
		writeProblem(w, p)
		return
	}
	if live {
		h.serveLive(w, r, liveRead{tenant: tenant, from: from, types: types, streamPrefix: prefix, correlationID: corr, query: sq, sse: form == formSSE})
		return
	}
	ctx := r.Context()
	evs, err := h.pollLog(ctx, store.ReadAllOptions{From: from, Limit: limit + 1, Tenant: tenant, Types: types,
		StreamPrefix: prefix, CorrelationID: corr, Backward: backward, Query: sq}, wait)
	if err != nil {
		if ctx.Err() == nil {
			writeProblem(w, problemFor(err, tenant, "", nil))
		}
		return
	}
	if len(evs) > limit {
		evs = evs[:limit]
		next := evs[len(evs)-1].Position + 1
		if backward {
			next = evs[len(evs)-1].Position - 1
		}
		setNext(w, r, map[string]string{"from": strconv.FormatInt(next, 10)})
	}
	writeEvents(w, form, evs)
}

// listStreams answers GET .../streams?prefix=P&after=S&limit=N.
func (h *Handler) listStreams(w http.ResponseWriter, r *http.Request, tenant string) {
	q := r.URL.Query()
	limit, p := queryLimit(q)
	if p != nil {
		writeProblem(w, p)
		return
	}
	out := struct {
		Streams []streamJSON `json:"streams"`
	}{Streams: []streamJSON{}}
	for si, err := range h.s.Streams(r.Context(), tenant, store.StreamsOptions{Prefix: q.Get("prefix"), After: q.Get("after"), Limit: limit + 1}) {
		if err != nil {
			writeProblem(w, problemFor(err, tenant, "", nil))
			return
		}
		out.Streams = append(out.Streams, toStreamJSON(si))
	}
	if len(out.Streams) > limit {
		out.Streams = out.Streams[:limit]
		setNext(w, r, map[string]string{"after": out.Streams[limit-1].Stream})
	}
	writeJSON(w, http.StatusOK, out)
}

// queryDirection reads direction=forward|backward (default forward).
func queryDirection(q url.Values) (backward bool, p *Problem) {
	switch d := q.Get("direction"); d {
	case "", "forward":
		return false, nil
	case "backward":
		return true, nil
	default:
		p := problemf("invalid-parameter", "direction=%q: must be forward or backward", d)
		p.Field, p.Reason = "direction", "must be forward or backward"
		return false, p
	}
}
