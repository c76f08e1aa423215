package serve

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"strconv"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/store"
)

// MaxTruncateBytes bounds a truncate's body.
const MaxTruncateBytes = 1024

// deleteStream answers DELETE .../streams/{stream}: a soft delete, or a
// hard one with ?hard=true; If-Match "N" or * is the condition on the
// stream's version. 200 with the tombstone's append result.
func (h *Handler) deleteStream(w http.ResponseWriter, r *http.Request, tenant, stream string) {
	if len(r.Header.Values("If-None-Match")) > 0 {
		writeProblem(w, invalidPrecondition("If-None-Match", "a delete takes If-Match (the stream's ETag, or *), not If-None-Match: a stream that does not exist cannot be deleted"))
		return
	}
	pc, p := parsePostPreconditions(r.Header)
	if p != nil {
		writeProblem(w, p)
		return
	}
	q := r.URL.Query()
	hard := false
	switch v := q.Get("hard"); v {
	case "", "false":
	case "true":
		hard = true
	default:
		p := problemf("invalid-parameter", "hard=%q: must be true or false", v)
		p.Field, p.Reason = "hard", "must be true or false"
		writeProblem(w, p)
		return
	}
	opts := store.DeleteOptions{Hard: hard, Reason: q.Get("reason"), By: h.who(r), Expected: pc.exp}
	res, err := h.s.Lifecycle().Delete(r.Context(), tenant, stream, opts)
	h.lifecycleAnswer(w, tenant, stream, res, err)
}

// truncateStream answers POST .../streams/{stream}/truncate with
// {"before":N}.
func (h *Handler) truncateStream(w http.ResponseWriter, r *http.Request, tenant, stream string) {
	if len(r.Header.Values("If-None-Match")) > 0 {
		writeProblem(w, invalidPrecondition("If-None-Match", "a truncate takes If-Match (the stream's ETag, or *), not If-None-Match: a stream that does not exist cannot be truncated"))
		return
	}
	pc, p := parsePostPreconditions(r.Header)
	if p != nil {
		writeProblem(w, p)
		return
	}
	before, p := decodeTruncate(r)
	if p != nil {
		p.Tenant, p.Stream = tenant, stream
		writeProblem(w, p)
		return
	}
	res, err := h.s.Lifecycle().Truncate(r.Context(), tenant, stream, before, pc.exp)
	h.lifecycleAnswer(w, tenant, stream, res, err)
}

// decodeTruncate reads {"before":N}, N a whole number.
func decodeTruncate(r *http.Request) (int64, *Problem) {
	ct := r.Header.Get("Content-Type")
	if m, _, err := mime.ParseMediaType(ct); err != nil || m != ctJSON {
		p := problemf("unsupported-media-type", "Content-Type %q: send {\"before\":N} as %s", ct, ctJSON)
		p.Field = "Content-Type"
		return 0, p
	}
	b, err := io.ReadAll(io.LimitReader(r.Body, MaxTruncateBytes+1))
	if err != nil {
		return 0, invalidBody("", "", "reading the body: %v", err)
	}
	if len(b) > MaxTruncateBytes {
		p := problemf("too-large", "the body is over %d bytes", MaxTruncateBytes)
		p.Field, p.Limit = "body", ptr(int64(MaxTruncateBytes))
		return 0, p
	}
	var in struct {
		Before *json.Number `json:"before"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	if err := dec.Decode(&in); err != nil || dec.More() {
		return 0, invalidBody("", "malformed JSON", "the body must be one JSON object {\"before\":N}: %v", err)
	}
	if in.Before == nil {
		return 0, invalidBody("before", "missing", "the body must name the first version to keep: {\"before\":N}")
	}
	n, err := strconv.ParseInt(in.Before.String(), 10, 64)
	if err != nil {
		p := problemf("invalid-parameter", "before %s: must be a whole number from 2 to the stream's version", in.Before.String())
		p.Field, p.Reason = "before", "must be a whole number"
		return 0, p
	}
	return n, nil
}

// who names the deleter for the tombstone: the token's tenant, never its
// secret.
func (h *Handler) who(r *http.Request) string {
	a, ok := h.lookup(r)
	switch {
	case !ok || a.all:
		return "http"
	default:
		return "token for tenant " + a.tenant
	}
}

// lifecycleAnswer writes a delete's or truncate's answer: 200 with the
// lifecycle event's append result and the new ETag, or the problem.
func (h *Handler) lifecycleAnswer(w http.ResponseWriter, tenant, stream string, res store.AppendResult, err error) {
	var ie *envelope.InvalidError
	switch {
	case err == nil:
	case errors.Is(err, store.ErrNotFound):
		writeProblem(w, streamNotFound(tenant, stream))
		return
	case errors.As(err, &ie) && ie.Field == "before":
		p := problemf("invalid-parameter", "before: %s", ie.Reason)
		p.Tenant, p.Stream, p.Field, p.Reason = tenant, stream, "before", ie.Reason
		writeProblem(w, p)
		return
	default:
		writeProblem(w, problemFor(err, tenant, stream, nil))
		return
	}
	body, _ := json.Marshal(appendOutput{Tenant: tenant, Stream: stream, Version: res.Version,
		FirstPosition: ptr(res.FirstPosition()), LastPosition: ptr(res.LastPosition())})
	w.Header().Set("ETag", etag(res.Version))
	w.Header().Set("Location", eventPath(tenant, stream, res.Events[0].StreamVersion))
	writeJSONBytes(w, http.StatusOK, append(body, '\n'))
}

func writeJSONBytes(w http.ResponseWriter, status int, b []byte) {
	w.Header().Set("Content-Type", ctJSON)
	w.WriteHeader(status)
	_, _ = w.Write(b)
}
