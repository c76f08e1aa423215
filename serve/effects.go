package serve

import (
	"bytes"
	"errors"
	"net/http"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/internal/effectjson"
	"github.com/eventlite/eventlite/store/effect"
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
	f := effect.Filter{Tenant: tenant}
	switch a := r.URL.Query().Get("awaiting"); a {
	case "", "false":
	case "true":
		f.States = []effect.State{effect.AwaitingApproval}
	default:
		p := problemf("invalid-parameter", "awaiting=%q: must be true or false", a)
		p.Tenant, p.Field, p.Reason = tenant, "awaiting", "must be true or false"
		writeProblem(w, p)
		return
	}
	es, err := effect.For(h.s).List(r.Context(), f)
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
		e   effect.Effect
		err error
	)
	if action == "approve" {
		e, err = effect.For(h.s).Approve(r.Context(), effect.Approval{Tenant: tenant, Key: key, ArgsHash: body["args_hash"], By: body["by"]})
	} else {
		e, err = effect.For(h.s).Reject(r.Context(), effect.Rejection{Tenant: tenant, Key: key, Reason: body["reason"], By: body["by"]})
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
		nf *effect.NotFoundError
		se *effect.StateError
		he *effect.ArgsHashMismatchError
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
// required), none twice (decodeJSONBody). by and reason follow the rules
// of an event's string attributes.
func decodeDecision(r *http.Request, fields map[string]bool) (map[string]string, *Problem) {
	var ms []bodyMember
	for _, name := range []string{"args_hash", "by", "reason"} {
		if required, ok := fields[name]; ok {
			ms = append(ms, bodyMember{name: name, kind: jsonString, required: required})
		}
	}
	body, p := decodeJSONBody(r, MaxDecisionBytes, "a JSON object with "+members(fields), ms...)
	if p != nil {
		return nil, p
	}
	out := body.strings
	for _, m := range ms {
		if m.name == "args_hash" {
			continue // any other hash than the effect's is args-hash-mismatch, after the key and state are checked
		}
		if p := textProblem("invalid-body", m.name, out[m.name], m.required); p != nil {
			return nil, p
		}
	}
	return out, nil
}

// textProblem checks free text a request gives (a decision's by or
// reason, a delete's reason) by the rules of an event's string
// attributes (envelope.ValidateText): valid UTF-8, no control character
// (CR and LF included), no leading or trailing white space, at most
// 1024 bytes. It answers 400 typ (invalid-body, invalid-parameter) or
// 413 too-large, naming field.
func textProblem(typ, field, v string, required bool) *Problem {
	err := envelope.ValidateText(field, v, required)
	if err == nil {
		return nil
	}
	var te *envelope.TooLargeError
	if errors.As(err, &te) {
		p := problemf("too-large", "%v", te)
		p.Field, p.Limit = field, ptr(int64(te.Limit))
		return p
	}
	var ie *envelope.InvalidError
	if !errors.As(err, &ie) {
		p := problemf(typ, "%s: %v", field, err)
		p.Field = field
		return p
	}
	p := problemf(typ, "%s: %s", field, ie.Reason)
	p.Field, p.Reason = field, ie.Reason
	return p
}

// members describes a decision's members for a problem's detail.
func members(fields map[string]bool) string {
	if _, ok := fields["args_hash"]; ok {
		return `"args_hash" (the effect's args_hash as listed) and "by" (who approves)`
	}
	return `"by" (who rejects) and an optional "reason"`
}
