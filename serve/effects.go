package serve

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"unicode/utf8"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/internal/effectjson"
	"github.com/eventlite/eventlite/internal/jcs"
	"github.com/eventlite/eventlite/store"
)

// MaxDecisionBytes bounds the body of an approval or a rejection: its
// members are at most 1024 bytes each once decoded.
const MaxDecisionBytes = 16 << 10

// effectsJSON is GET .../effects: each effect as 'eventlite effects list
// --json' prints it.
type effectsJSON struct {
	Effects []effectjson.Effect `json:"effects"`
}

// listEffects answers GET .../effects[?awaiting=true]: the tenant's
// effects, oldest update first.
func (h *Handler) listEffects(w http.ResponseWriter, r *http.Request, tenant string) {
	f := store.EffectFilter{Tenant: tenant}
	switch a := r.URL.Query().Get("awaiting"); a {
	case "", "false":
	case "true":
		f.States = []store.EffectState{store.EffectAwaitingApproval}
	default:
		p := problemf("invalid-parameter", "awaiting=%q: must be true or false", a)
		p.Tenant, p.Field, p.Reason = tenant, "awaiting", "must be true or false"
		writeProblem(w, p)
		return
	}
	es, err := h.s.Effects().List(r.Context(), f)
	if err != nil {
		writeProblem(w, problemFor(err, tenant, "", nil))
		return
	}
	out := effectsJSON{Effects: make([]effectjson.Effect, 0, len(es))}
	for _, e := range es {
		out.Effects = append(out.Effects, effectjson.From(e))
	}
	writeEffectJSON(w, out)
}

// decideEffect answers POST .../effects/{key}/approve with
// {"args_hash","by"} and .../reject with {"reason","by"}: 200 and the
// effect as it is after the decision.
func (h *Handler) decideEffect(w http.ResponseWriter, r *http.Request, tenant, key, action string) {
	fields := map[string]bool{"by": true, "args_hash": true} // member: required
	if action == "reject" {
		fields = map[string]bool{"by": true, "reason": false}
	}
	body, p := decodeDecision(r, fields)
	if p != nil {
		p.Tenant = tenant
		writeProblem(w, p)
		return
	}
	if key == "" || len(key) > 255 {
		p := problemf("effect-not-found", "no effect %q in tenant %s: an effect key is 1-255 bytes", key, tenant)
		p.Tenant, p.Field, p.Reason = tenant, "key", "must be 1-255 bytes"
		writeProblem(w, p)
		return
	}
	var (
		e   store.Effect
		err error
	)
	if action == "approve" {
		e, err = h.s.Effects().Approve(r.Context(), store.EffectApproval{Tenant: tenant, Key: key, ArgsHash: body["args_hash"], By: body["by"]})
	} else {
		e, err = h.s.Effects().Reject(r.Context(), store.EffectRejection{Tenant: tenant, Key: key, Reason: body["reason"], By: body["by"]})
	}
	if err != nil {
		writeProblem(w, effectProblem(err, tenant, key, action))
		return
	}
	h.log.Info("effect decided", "tenant", tenant, "key", key, "action", action, "state", e.State, "by", e.DecidedBy)
	writeEffectJSON(w, effectjson.From(e))
}

// writeEffectJSON answers 200 with v encoded as the CLI encodes effects,
// so that each effect's args are its stored bytes and args_hash their
// hash.
func writeEffectJSON(w http.ResponseWriter, v any) {
	var b bytes.Buffer
	if err := effectjson.Encode(&b, v); err != nil {
		writeProblem(w, problemf("internal", "%v", err))
		return
	}
	w.Header().Set("Content-Type", ctJSON)
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(b.Bytes())
}

// effectProblem maps an error of Approve or Reject to its problem.
func effectProblem(err error, tenant, key, action string) *Problem {
	var (
		nf *store.EffectNotFoundError
		se *store.EffectStateError
		he *store.ArgsHashMismatchError
		p  *Problem
	)
	switch {
	case errors.As(err, &nf):
		p = problemf("effect-not-found", "no effect %q in tenant %s: list them at GET /v1/tenants/%s/effects", key, tenant, escapeSegment(tenant))
	case errors.As(err, &se):
		p = problemf("effect-state", "effect %q is %s: only an effect AWAITING_APPROVAL or APPROVED can be %s; nothing changed",
			key, se.State, map[string]string{"approve": "approved", "reject": "rejected"}[action])
		p.State = string(se.State)
	case errors.As(err, &he):
		p = problemf("args-hash-mismatch", "args_hash %q is not the hash of effect %q's arguments: read them again (GET /v1/tenants/%s/effects) and approve what you read; nothing changed",
			he.Given, key, escapeSegment(tenant))
		p.Field = "args_hash"
	default:
		return problemFor(err, tenant, "", nil)
	}
	p.Tenant = tenant
	return p
}

// decodeDecision reads a decision's body: a JSON object (Content-Type
// application/json, which a browser cannot send across origins without a
// CORS preflight) whose members are strings, each named in fields (true:
// required), none twice. by and reason follow the rules of an event's
// string attributes.
func decodeDecision(r *http.Request, fields map[string]bool) (map[string]string, *Problem) {
	ct := r.Header.Get("Content-Type")
	if m, _, err := mime.ParseMediaType(ct); err != nil || m != ctJSON {
		p := problemf("unsupported-media-type", "Content-Type %q: send the decision as %s", ct, ctJSON)
		p.Field = "Content-Type"
		return nil, p
	}
	b, err := io.ReadAll(io.LimitReader(r.Body, MaxDecisionBytes+1))
	if err != nil {
		return nil, invalidBody("", "", "reading the body: %v", err)
	}
	if len(b) > MaxDecisionBytes {
		p := problemf("too-large", "the body is over %d bytes", MaxDecisionBytes)
		p.Field, p.Limit = "body", ptr(int64(MaxDecisionBytes))
		return nil, p
	}
	if !utf8.Valid(b) {
		return nil, invalidBody("", "not valid UTF-8", "the body is not valid UTF-8")
	}
	want := "a JSON object with " + members(fields)
	dec := json.NewDecoder(bytes.NewReader(b))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, invalidBody("", "not a JSON object", "the body must be %s", want)
	}
	out := make(map[string]string, len(fields))
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, invalidBody("", "malformed JSON", "the body is not valid JSON: %v", err)
		}
		name, _ := tok.(string)
		if _, ok := fields[name]; !ok {
			return nil, invalidBody(name, "unknown member", "unknown member %q: the body is %s", name, want)
		}
		if _, ok := out[name]; ok {
			return nil, invalidBody(name, "given twice", "member %q given twice", name)
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return nil, invalidBody(name, "malformed JSON", "the body is not valid JSON: %v", err)
		}
		var v string
		if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &v) != nil {
			return nil, invalidBody(name, "must be a string", "member %q must be a string, not %s", name, raw)
		}
		out[name] = v
	}
	if _, err := dec.Token(); err != nil {
		return nil, invalidBody("", "malformed JSON", "the body is not valid JSON: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, invalidBody("", "data after the object", "the body must be one JSON object and nothing after it")
	}
	// encoding/json turns an escaped lone surrogate into U+FFFD; refuse
	// it, as an event's attributes do.
	if _, err := jcs.Canonicalize(b); err != nil {
		return nil, invalidBody("", "not I-JSON", "the body is not I-JSON (RFC 7493): %v", err)
	}
	for _, name := range []string{"args_hash", "by", "reason"} {
		required, ok := fields[name]
		if !ok {
			continue
		}
		if _, given := out[name]; required && !given {
			return nil, invalidBody(name, "required", "member %q is required: the body is %s", name, want)
		}
		if name == "args_hash" {
			continue // any other hash than the effect's is args-hash-mismatch, after the key and state are checked
		}
		if err := envelope.ValidateText(name, out[name], required); err != nil {
			var te *envelope.TooLargeError
			if errors.As(err, &te) {
				p := problemf("too-large", "%v", te)
				p.Field, p.Limit = name, ptr(int64(te.Limit))
				return nil, p
			}
			var ie *envelope.InvalidError
			if errors.As(err, &ie) {
				return nil, invalidBody(name, ie.Reason, "%v", ie)
			}
			return nil, invalidBody(name, "", "%v", err)
		}
	}
	return out, nil
}

func invalidBody(field, reason, format string, args ...any) *Problem {
	p := problemf("invalid-body", format, args...)
	p.Field, p.Reason = field, reason
	return p
}

// members describes a decision's members for a problem's detail.
func members(fields map[string]bool) string {
	if _, ok := fields["args_hash"]; ok {
		return `"args_hash" (the effect's args_hash as listed) and "by" (who approves)`
	}
	return `"by" (who rejects) and an optional "reason"`
}
