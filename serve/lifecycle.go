package serve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/lifecycle"
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
	if len(q["reason"]) > 1 {
		p := problemf("invalid-parameter", "reason given %d times: send it once", len(q["reason"]))
		p.Field, p.Reason = "reason", "given more than once"
		writeProblem(w, p)
		return
	}
	// The reason follows the attribute rule: refused, never rewritten
	// (the tombstone's JSON would turn invalid UTF-8 into U+FFFD).
	if p := textProblem("invalid-parameter", "reason", q.Get("reason"), false); p != nil {
		writeProblem(w, p)
		return
	}
	opts := lifecycle.DeleteOptions{Hard: hard, Reason: q.Get("reason"), By: h.who(r), Expected: pc.exp}
	h.lifecycle(w, r, tenant, stream, "http.delete", fmt.Sprintf("hard=%t\nreason=%q\n", hard, opts.Reason),
		func(ctx context.Context, tx *store.Tx) (store.AppendResult, error) {
			if tx == nil {
				return lifecycle.For(h.s).Delete(ctx, tenant, stream, opts)
			}
			return lifecycle.For(h.s).DeleteTx(ctx, tx, tenant, stream, opts)
		})
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
	h.lifecycle(w, r, tenant, stream, "http.truncate", fmt.Sprintf("before=%d\n", before),
		func(ctx context.Context, tx *store.Tx) (store.AppendResult, error) {
			if tx == nil {
				return lifecycle.For(h.s).Truncate(ctx, tenant, stream, before, pc.exp)
			}
			return lifecycle.For(h.s).TruncateTx(ctx, tx, tenant, stream, before, pc.exp)
		})
}

// lifecycle runs a delete or truncate (op, on its own, or inside a
// transaction with the operation ledger when the request has an
// Idempotency-Key: a retry with the same key and request answers the
// first answer, as appends do) and answers. input is what, besides the
// method, path and If- headers, the request asks.
func (h *Handler) lifecycle(w http.ResponseWriter, r *http.Request, tenant, stream, opType, input string,
	op func(ctx context.Context, tx *store.Tx) (store.AppendResult, error)) {
	ctx := r.Context()
	key, p := idempotencyKey(r.Header)
	if p != nil {
		p.Tenant = tenant
		writeProblem(w, p)
		return
	}
	if key == "" {
		res, err := op(ctx, nil)
		if err != nil {
			writeProblem(w, lifecycleProblem(err, tenant, stream))
			return
		}
		lifecycleAnswer(tenant, stream, res).write(w, false)
		return
	}
	ans, replayed, err := h.once(w, r, tenant, key, opType, []byte(input), nil, func(tx *store.Tx) (*answer, error) {
		res, err := op(ctx, tx)
		if err != nil {
			return nil, err
		}
		return lifecycleAnswer(tenant, stream, res), nil
	})
	if err != nil {
		var pe *Problem
		if errors.As(err, &pe) {
			writeProblem(w, pe)
			return
		}
		writeProblem(w, lifecycleProblem(err, tenant, stream))
		return
	}
	if ans != nil {
		ans.write(w, replayed)
	}
}

// decodeTruncate reads {"before":N}, N a whole number (decodeJSONBody).
func decodeTruncate(r *http.Request) (int64, *Problem) {
	body, p := decodeJSONBody(r, MaxTruncateBytes, `{"before":N}`, bodyMember{name: "before", kind: jsonInteger, required: true})
	if p != nil {
		return 0, p
	}
	return body.integers["before"], nil
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

// lifecycleProblem is the problem of a refused delete or truncate.
func lifecycleProblem(err error, tenant, stream string) *Problem {
	var ie *envelope.InvalidError
	switch {
	case errors.Is(err, store.ErrNotFound):
		return streamNotFound(tenant, stream)
	case errors.As(err, &ie) && ie.Field == "before":
		p := problemf("invalid-parameter", "before: %s", ie.Reason)
		p.Tenant, p.Stream, p.Field, p.Reason = tenant, stream, "before", ie.Reason
		return p
	}
	return problemFor(err, tenant, stream, nil)
}

// lifecycleAnswer is a delete's or truncate's answer: 200 with the
// lifecycle event's append result and the new ETag.
func lifecycleAnswer(tenant, stream string, res store.AppendResult) *answer {
	body, _ := json.Marshal(appendOutput{Tenant: tenant, Stream: stream, Version: res.Version,
		FirstPosition: ptr(res.FirstPosition()), LastPosition: ptr(res.LastPosition())})
	return &answer{Status: http.StatusOK, Body: append(body, '\n'), Header: map[string]string{
		"ETag":     etag(res.Version),
		"Location": eventPath(tenant, stream, res.Events[0].StreamVersion),
	}}
}
