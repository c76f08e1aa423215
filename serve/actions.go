package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"time"

	"github.com/eventlite/eventlite/internal/inside"
	"github.com/eventlite/eventlite/projection"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/outbox"
)

// The operator's actions over HTTP: dead letters (retry, discard) and
// quarantined events (list, retry, skip). Each action takes an
// Idempotency-Key: a repeated request with the key gets the first answer.

// storeWideTenant is the ledger tenant of the actions that belong to no
// tenant (a projection's quarantine): the ledger keeps keys per tenant.
// "_store" is a valid tenant name, so the keys of store-wide actions have
// a namespace of their own in it (storeWideKeys): a real tenant named
// _store records its keys as http:KEY, and they never meet.
const storeWideTenant = "_store"

// storeWideKeys prefixes the operation ids of store-wide actions.
const storeWideKeys = "store."

// act answers an operator action. Without an Idempotency-Key, do runs
// and its answer is written. With one, a key already answered gets that
// answer again (Idempotent-Replayed: true) or, used for another request,
// 422 idempotency-key-mismatch; else do runs (one request per key at a
// time) and a success is recorded in the operation ledger. The store's
// operator calls commit on their own, so the record is a second
// transaction: a crash between the two leaves the action done and the
// key unrecorded, and a retry then gets the action's own answer for a
// done action (404 for a dead letter discarded).
func (h *Handler) act(w http.ResponseWriter, r *http.Request, tenant, opType string, do func(ctx context.Context) (*answer, *Problem)) {
	h.actIn(w, r, tenant, "", opType, nil, do)
}

// actStoreWide is act for an action that belongs to no tenant: its key
// is recorded under storeWideTenant in the storeWideKeys namespace.
func (h *Handler) actStoreWide(w http.ResponseWriter, r *http.Request, opType string, do func(ctx context.Context) (*answer, *Problem)) {
	h.actIn(w, r, storeWideTenant, storeWideKeys, opType, nil, do)
}

// actOn is act for a request whose body (input) is part of what it asks.
// An answer of do that is not 2xx is written and not recorded.
func (h *Handler) actOn(w http.ResponseWriter, r *http.Request, tenant, opType string, input []byte, do func(ctx context.Context) (*answer, *Problem)) {
	h.actIn(w, r, tenant, "", opType, input, do)
}

// actIn is actOn with the namespace ns of the key's operation id in the
// tenant's ledger ("" for a tenant's own actions).
func (h *Handler) actIn(w http.ResponseWriter, r *http.Request, tenant, ns, opType string, input []byte, do func(ctx context.Context) (*answer, *Problem)) {
	ctx := r.Context()
	key, p := idempotencyKey(r.Header)
	if p != nil {
		p.Tenant = tenant
		writeProblem(w, p)
		return
	}
	if key == "" {
		ans, p := do(ctx)
		switch {
		case p != nil:
			writeProblem(w, p)
		case ans.Status >= 300:
			writeRefusal(w, ans)
		default:
			ans.write(w, false)
		}
		return
	}
	if !h.enter(tenant, ns+key) {
		p := problemf("idempotency-key-in-flight", "a request with Idempotency-Key %q is still being answered: retry after a second", key)
		p.Tenant = tenant
		writeProblem(w, p.with("Retry-After", "1"))
		return
	}
	defer h.leave(tenant, ns+key)
	fp, opID := requestFingerprint(r, input), operationIDIn(ns, key)
	stored, ok, err := h.s.Aggregates().Operation(ctx, tenant, opID)
	if err != nil {
		writeProblem(w, problemFor(err, tenant, "", nil))
		return
	}
	if ok {
		if stored.InputHash != fp || stored.Type != opType {
			p := problemf("idempotency-key-mismatch", "Idempotency-Key %q was used for another request: use a new key for a new request", key)
			p.Tenant, p.Field = tenant, "Idempotency-Key"
			writeProblem(w, p)
			return
		}
		var ans answer
		if err := json.Unmarshal(stored.Result, &ans); err != nil {
			writeProblem(w, problemf("internal", "the answer recorded for Idempotency-Key %q does not decode: %v", key, err))
			return
		}
		ans.write(w, true)
		return
	}
	ans, p := do(ctx)
	if p != nil {
		writeProblem(w, p)
		return
	}
	if ans.Status >= 300 {
		writeRefusal(w, ans)
		return
	}
	// The body is kept byte for byte: json.Marshal would escape <, > and
	// & inside it (an effect's arguments are shown as stored).
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	err = enc.Encode(ans)
	rec := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	if err == nil {
		err = h.s.Update(ctx, func(tx *store.Tx) error {
			_, err := store.Bookkeeping(inside.Key{}, tx).RecordOperation(ctx, store.Operation{Tenant: tenant, ID: opID, Type: opType, InputHash: fp, Result: rec})
			return err
		})
	}
	if err != nil {
		// The action is done: answer it, and say the key is not kept.
		h.log.Warn("an action's Idempotency-Key was not recorded", "type", opType, "tenant", tenant, "error", err)
	}
	ans.write(w, false)
}

// writeRefusal writes a refusal as the handler wrote it (a problem,
// with its own Content-Type).
func writeRefusal(w http.ResponseWriter, ans *answer) {
	for k, v := range ans.Header {
		w.Header().Set(k, v)
	}
	w.WriteHeader(ans.Status)
	_, _ = w.Write(ans.Body)
}

// jsonAnswer is a 200 answer with v as its body.
func jsonAnswer(v any) (*answer, *Problem) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, problemf("internal", "%v", err)
	}
	return &answer{Status: http.StatusOK, Body: append(b, '\n')}, nil
}

func deadLetterOf(d outbox.DeadLetter) deadLetterJSON {
	return deadLetterJSON{Tenant: d.Tenant, EventID: d.EventID, Stream: d.Stream, Version: d.Version,
		Position: d.Position, Type: d.Type, Attempts: d.Attempts, Error: d.Error, DeadAt: d.DeadAt}
}

// deadLetterProblem maps an error of a dead-letter action.
func deadLetterProblem(err error, tenant string) *Problem {
	var nf *outbox.DeadLetterNotFoundError
	if errors.As(err, &nf) {
		p := problemf("dead-letter-not-found", "%v: list them at GET /v1/tenants/%s/dead-letters", err, escapeSegment(tenant))
		p.Tenant = tenant
		return p
	}
	return problemFor(err, tenant, "", nil)
}

// retryDeadLetter answers POST .../dead-letters/{event-id}/retry: 204.
func (h *Handler) retryDeadLetter(w http.ResponseWriter, r *http.Request, tenant, eventID string) {
	h.act(w, r, tenant, "http.dead-letter.retry", func(ctx context.Context) (*answer, *Problem) {
		if _, err := outbox.For(h.s).RetryDeadLetter(ctx, tenant, eventID); err != nil {
			return nil, deadLetterProblem(err, tenant)
		}
		return &answer{Status: http.StatusNoContent}, nil
	})
}

// discardDeadLetter answers POST .../dead-letters/{event-id}/discard:
// 200 and the dead letter given up.
func (h *Handler) discardDeadLetter(w http.ResponseWriter, r *http.Request, tenant, eventID string) {
	h.act(w, r, tenant, "http.dead-letter.discard", func(ctx context.Context) (*answer, *Problem) {
		d, err := outbox.For(h.s).DiscardDeadLetter(ctx, tenant, eventID)
		if err != nil {
			return nil, deadLetterProblem(err, tenant)
		}
		return jsonAnswer(struct {
			Discarded deadLetterJSON `json:"discarded"`
		}{deadLetterOf(d)})
	})
}

// quarantinedJSON is one quarantine entry as the API shows it.
type quarantinedJSON struct {
	Name             string     `json:"name"`
	Kind             string     `json:"kind"`
	EventID          string     `json:"event_id"`
	Tenant           string     `json:"tenant"`
	Stream           string     `json:"stream"`
	Version          int64      `json:"version"`
	Position         int64      `json:"position,string"`
	Type             string     `json:"type"`
	Reason           string     `json:"reason"`
	Error            string     `json:"error"`
	Attempts         int        `json:"attempts"`
	CreatedAt        time.Time  `json:"created_at"`
	LastFailedAt     time.Time  `json:"last_failed_at"`
	RetryRequestedAt *time.Time `json:"retry_requested_at,omitempty"`
	ResolvedAt       *time.Time `json:"resolved_at,omitempty"`
	Resolution       string     `json:"resolution,omitempty"`
}

func quarantinedOf(qs []projection.QuarantineEntry) []quarantinedJSON {
	out := make([]quarantinedJSON, 0, len(qs))
	for _, q := range qs {
		j := quarantinedJSON{Name: q.Consumer, Kind: q.Kind, EventID: q.EventID, Tenant: q.Tenant, Stream: q.Subject, Version: q.Version,
			Position: q.Position, Type: q.Type, Reason: string(q.Reason), Error: q.Error, Attempts: q.Attempts,
			CreatedAt: q.CreatedAt, LastFailedAt: q.LastFailedAt, Resolution: q.Resolution}
		if !q.RetryRequestedAt.IsZero() {
			j.RetryRequestedAt = ptr(q.RetryRequestedAt)
		}
		if !q.ResolvedAt.IsZero() {
			j.ResolvedAt = ptr(q.ResolvedAt)
		}
		out = append(out, j)
	}
	return out
}

// listQuarantine answers GET /v1/quarantine (every open entry; a *
// token's) and GET /v1/tenants/{tenant}/quarantine (the open entries of
// the tenant's events), oldest first.
func (h *Handler) listQuarantine(w http.ResponseWriter, r *http.Request, tenant string) {
	name := r.URL.Query().Get("name")
	qs, err := projection.Quarantine(h.s).Open(r.Context(), name)
	if err != nil {
		writeProblem(w, quarantineProblem(err))
		return
	}
	if tenant != "" {
		kept := qs[:0]
		for _, q := range qs {
			if q.Tenant == tenant {
				kept = append(kept, q)
			}
		}
		qs = kept
	}
	writeJSON(w, http.StatusOK, struct {
		Quarantine []quarantinedJSON `json:"quarantine"`
	}{quarantinedOf(qs)})
}

// quarantineAction answers POST /v1/quarantine/{name}/{event-id}/retry
// (the entries marked for a retry: the runner applies the event again on
// its next pass) and .../skip (the entries resolved as skipped; a
// projection stopped on the event moves past it): 200 and the entries.
func (h *Handler) quarantineAction(w http.ResponseWriter, r *http.Request, name, eventID, action string) {
	h.actStoreWide(w, r, "http.quarantine."+action, func(ctx context.Context) (*answer, *Problem) {
		var (
			qs  []projection.QuarantineEntry
			err error
		)
		if action == "retry" {
			qs, err = projection.Quarantine(h.s).Retry(ctx, name, eventID)
		} else {
			qs, err = projection.Quarantine(h.s).Skip(ctx, name, eventID)
		}
		if err != nil {
			return nil, quarantineProblem(err)
		}
		h.log.Info("quarantine action", "name", name, "event_id", eventID, "action", action)
		return jsonAnswer(struct {
			Action  string            `json:"action"`
			Entries []quarantinedJSON `json:"entries"`
		}{action, quarantinedOf(qs)})
	})
}

// quarantineProblem maps an error of a quarantine read or action.
func quarantineProblem(err error) *Problem {
	var nf *projection.QuarantineNotFoundError
	if errors.As(err, &nf) {
		return problemf("quarantine-not-found", "%v: list the open entries at GET /v1/quarantine", nf)
	}
	return problemFor(err, "", "", nil)
}

// decideEffectOnce answers an approval or rejection (decideEffect) with
// an Idempotency-Key's rules: the body is part of the request the key
// names.
func (h *Handler) decideEffectOnce(w http.ResponseWriter, r *http.Request, tenant, key, action string) {
	body, err := io.ReadAll(r.Body) // buffered already, within its limit
	if err != nil {
		writeProblem(w, invalidBody("", "", "reading the body: %v", err))
		return
	}
	h.actOn(w, r, tenant, "http.effect."+action, body, func(context.Context) (*answer, *Problem) {
		r.Body = io.NopCloser(bytes.NewReader(body))
		rec := &answerRecorder{header: http.Header{}}
		h.decideEffect(rec, r, tenant, key, action)
		ans := &answer{Status: rec.status, Header: map[string]string{}, Body: rec.body.Bytes()}
		for k := range rec.header {
			ans.Header[k] = rec.header.Get(k)
		}
		return ans, nil
	})
}

// answerRecorder keeps a handler's answer, to record or replay it.
type answerRecorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (r *answerRecorder) Header() http.Header { return r.header }

func (r *answerRecorder) WriteHeader(status int) {
	if r.status == 0 {
		r.status = status
	}
}

func (r *answerRecorder) Write(b []byte) (int, error) {
	r.WriteHeader(http.StatusOK)
	return r.body.Write(b)
}
