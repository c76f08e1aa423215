package serve_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/eventlite/eventlite/serve"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/effect"
)

// effectFields are the members of each effect, in order: those of
// 'eventlite effects list --json'.
var effectFields = []string{"tenant", "key", "state", "kind", "resource", "summary", "args", "args_hash", "requested_by", "requested_at",
	"decided_by", "decided_at", "reason", "attempts", "last_error", "provider_ref", "created", "updated", "erasure_key", "args_erased", "args_encrypted"}

// calls records an effect's calls and the arguments each received.
type calls struct {
	mu   sync.Mutex
	args []string
}

func (c *calls) call(_ context.Context, args json.RawMessage) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.args = append(c.args, string(args))
	return "ref-1", nil
}

func (c *calls) got() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.args)
}

// refund is an effect that needs a person's approval; its arguments hold
// characters encoding/json escapes by default, so that an answer that
// does not print the stored bytes shows.
func refund(tenant, key string) effect.Intent {
	return effect.Intent{Tenant: tenant, Key: key, Kind: effect.External, Resource: "order/o-1",
		Summary: "refund 12.50 <EUR> & notify", RequestedBy: "support-bot", NeedsApproval: true,
		Args: json.RawMessage(`{"order":"o-1","note":"<late> & \"damaged\" \u2028✓","amount":1250}`)}
}

const refundArgs = `{"amount":1250,"note":"<late> & \"damaged\" ` + "\u2028" + `✓","order":"o-1"}`

// request records r as awaiting approval: Do runs nothing.
func request(t *testing.T, s *store.Store, r effect.Intent, c *calls) {
	t.Helper()
	if _, err := effect.For(s).Do(context.Background(), r, c.call); !errors.Is(err, effect.ErrAwaitingApproval) {
		t.Fatalf("first Do: %v, want ErrAwaitingApproval", err)
	}
}

// listed is GET .../effects: each effect's members as sent, after
// checking their names and order.
func (ts *testServer) listed(t *testing.T, tenant, query string, header ...string) []map[string]json.RawMessage {
	t.Helper()
	r := ts.do("GET", "/v1/tenants/"+tenant+"/effects"+query, nil, header...)
	if r.status != 200 || r.header.Get("Content-Type") != "application/json" {
		t.Fatalf("list: %d %s", r.status, r.body)
	}
	var body struct{ Effects []json.RawMessage }
	if err := json.Unmarshal(r.body, &body); err != nil || body.Effects == nil {
		t.Fatalf("list %s: %v", r.body, err)
	}
	var out []map[string]json.RawMessage
	for _, raw := range body.Effects {
		out = append(out, effectMembers(t, raw))
	}
	return out
}

// effectMembers decodes one effect, checking its members' names and order.
func effectMembers(t *testing.T, raw []byte) map[string]json.RawMessage {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("effect %s", raw)
	}
	var names []string
	for dec.More() {
		tok, _ := dec.Token()
		names = append(names, tok.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatal(err)
		}
	}
	if !slices.Equal(names, effectFields) {
		t.Fatalf("members %v, want %v", names, effectFields)
	}
	m := map[string]json.RawMessage{}
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func str(t *testing.T, m map[string]json.RawMessage, name string) string {
	t.Helper()
	var s string
	if err := json.Unmarshal(m[name], &s); err != nil {
		t.Fatalf("%s: %s: %v", name, m[name], err)
	}
	return s
}

func decision(hash, by string) []byte {
	b, _ := json.Marshal(map[string]string{"args_hash": hash, "by": by})
	return b
}

func effectPath(tenant, key, action string) string {
	return "/v1/tenants/" + tenant + "/effects/" + url.PathEscape(key) + "/" + action
}

// approve posts an approval.
func (ts *testServer) approve(tenant, key, hash, by string, header ...string) response {
	ts.t.Helper()
	return ts.do("POST", effectPath(tenant, key, "approve"), decision(hash, by), append([]string{"Content-Type", "application/json"}, header...)...)
}

func (ts *testServer) reject(tenant, key, body string, header ...string) response {
	ts.t.Helper()
	return ts.do("POST", effectPath(tenant, key, "reject"), []byte(body), append([]string{"Content-Type", "application/json"}, header...)...)
}

// effect reads an effect from the store.
func (ts *testServer) effect(tenant, key string) effect.Effect {
	ts.t.Helper()
	e, ok, err := effect.For(ts.s).Get(context.Background(), tenant, key)
	if err != nil || !ok {
		ts.t.Fatalf("effect %s/%s: %v %v", tenant, key, ok, err)
	}
	return e
}

// A person reads the exact arguments and their hash over HTTP, approves
// that hash, and the service's next Do runs the effect once with the
// stored arguments.
func TestEffectApproveRunsOnceWithStoredArgs(t *testing.T) {
	ts := newServer(t, nil)
	ctx := context.Background()
	var c calls
	r := refund("default", "refund/o-1:1") // a "/" in the key: one percent-encoded segment
	request(t, ts.s, r, &c)

	all := ts.listed(t, "default", "")
	if len(all) != 1 {
		t.Fatalf("%d effects, want 1", len(all))
	}
	m := all[0]
	if string(m["args"]) != refundArgs {
		t.Fatalf("args %s, want the stored canonical bytes %s", m["args"], refundArgs)
	}
	sum := sha256.Sum256(m["args"])
	hash := str(t, m, "args_hash")
	if hash != hex.EncodeToString(sum[:]) {
		t.Fatalf("args_hash %s is not the SHA-256 of the args bytes sent", hash)
	}
	if str(t, m, "state") != "AWAITING_APPROVAL" || str(t, m, "key") != r.Key || str(t, m, "summary") != r.Summary ||
		str(t, m, "requested_by") != "support-bot" || str(t, m, "decided_at") != "" || str(t, m, "kind") != "external" {
		t.Errorf("listed: %v", m)
	}
	for _, name := range []string{"requested_at", "created", "updated"} {
		if ts, err := time.Parse(time.RFC3339Nano, str(t, m, name)); err != nil || ts.Location() != time.UTC {
			t.Errorf("%s %s: %v", name, m[name], err)
		}
	}

	res := ts.approve("default", r.Key, hash, "alice")
	if res.status != 200 {
		t.Fatalf("approve: %d %s", res.status, res.body)
	}
	a := effectMembers(t, res.body)
	if str(t, a, "state") != "APPROVED" || str(t, a, "decided_by") != "alice" || str(t, a, "decided_at") == "" || string(a["args"]) != refundArgs {
		t.Errorf("approve answered %s", res.body)
	}
	if len(c.got()) != 0 {
		t.Fatal("approval ran the effect")
	}
	for range 2 {
		e, err := effect.For(ts.s).Do(ctx, r, c.call)
		if err != nil || e.State != effect.Completed {
			t.Fatalf("Do after approval: %v %v", e.State, err)
		}
	}
	if got := c.got(); len(got) != 1 || got[0] != refundArgs {
		t.Fatalf("calls %q, want one with the stored arguments", got)
	}
	// Approving a completed effect is refused.
	ts.approve("default", r.Key, hash, "alice").wantProblem(t, 409, "effect-state")
}

// A hash other than the arguments', malformed included, changes nothing
// and runs nothing.
func TestEffectApproveWrongHash(t *testing.T) {
	ts := newServer(t, nil)
	var c calls
	r := refund("default", "refund:o-1")
	request(t, ts.s, r, &c)
	before := ts.effect("default", r.Key)
	other := sha256.Sum256([]byte(`{"amount":1}`))
	for _, hash := range []string{hex.EncodeToString(other[:]), strings.ToUpper(before.ArgsHash()), "xyz", ""} {
		p := ts.approve("default", r.Key, hash, "alice").wantProblem(t, 409, "args-hash-mismatch")
		if p["field"] != "args_hash" || p["tenant"] != "default" || strings.Contains(p["detail"].(string), before.ArgsHash()) {
			t.Errorf("problem for hash %q: %v", hash, p)
		}
	}
	if after := ts.effect("default", r.Key); !after.UpdatedAt.Equal(before.UpdatedAt) || after.State != effect.AwaitingApproval || after.DecidedBy != "" {
		t.Fatalf("a refused approval changed the effect: %+v", after)
	}
	if _, err := effect.For(ts.s).Do(context.Background(), r, c.call); !errors.Is(err, effect.ErrAwaitingApproval) || len(c.got()) != 0 {
		t.Fatalf("Do after refused approvals: %v, %d calls", err, len(c.got()))
	}
}

// Several people approve at once: every request answers 200 with the
// same, first, approval, which is the one recorded; the effect runs once
// through ResumeApproved.
func TestEffectConcurrentApprovals(t *testing.T) {
	ts := newServer(t, nil)
	var c calls
	r := refund("default", "refund:o-1")
	request(t, ts.s, r, &c)
	hash := ts.effect("default", r.Key).ArgsHash()
	const n = 4
	start := make(chan struct{})
	answers := make([]response, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			answers[i] = doReq(t, "POST", ts.url+effectPath("default", r.Key, "approve"), decision(hash, "person-"+string(rune('a'+i))),
				"Content-Type", "application/json")
		})
	}
	close(start)
	wg.Wait()
	e := ts.effect("default", r.Key)
	if e.State != effect.Approved || !strings.HasPrefix(e.DecidedBy, "person-") {
		t.Fatalf("recorded %+v", e)
	}
	for i, a := range answers {
		if a.status != 200 {
			t.Fatalf("approval %d: %d %s", i, a.status, a.body)
		}
		m := effectMembers(t, a.body)
		if str(t, m, "decided_by") != e.DecidedBy || str(t, m, "decided_at") != e.DecidedAt.UTC().Format(time.RFC3339Nano) {
			t.Errorf("approval %d answered %s, recorded %s at %s", i, a.body, e.DecidedBy, e.DecidedAt)
		}
	}
	ran, err := effect.For(ts.s).ResumeApproved(context.Background(), "default", func(ctx context.Context, _ effect.Effect, args json.RawMessage) (string, error) {
		return c.call(ctx, args)
	})
	if err != nil || len(ran) != 1 || ran[0].State != effect.Completed {
		t.Fatalf("ResumeApproved: %v %+v", err, ran)
	}
	if got := c.got(); len(got) != 1 || got[0] != refundArgs {
		t.Fatalf("calls %q", got)
	}
}

// A rejected effect never runs, and no later decision changes it.
func TestEffectReject(t *testing.T) {
	ts := newServer(t, nil)
	var c calls
	r := refund("default", "refund:o-1")
	request(t, ts.s, r, &c)
	hash := ts.effect("default", r.Key).ArgsHash()
	res := ts.reject("default", r.Key, `{"by":"bob","reason":"the amount is wrong"}`)
	if res.status != 200 {
		t.Fatalf("reject: %d %s", res.status, res.body)
	}
	m := effectMembers(t, res.body)
	if str(t, m, "state") != "REJECTED" || str(t, m, "decided_by") != "bob" || str(t, m, "reason") != "the amount is wrong" {
		t.Errorf("reject answered %s", res.body)
	}
	if _, err := effect.For(ts.s).Do(context.Background(), r, c.call); !errors.Is(err, effect.ErrRejected) || len(c.got()) != 0 {
		t.Fatalf("Do after reject: %v, %d calls", err, len(c.got()))
	}
	before := ts.effect("default", r.Key)
	if p := ts.approve("default", r.Key, hash, "alice").wantProblem(t, 409, "effect-state"); p["state"] != "REJECTED" {
		t.Errorf("approve a rejected effect: %v", p)
	}
	if p := ts.reject("default", r.Key, `{"by":"carol"}`).wantProblem(t, 409, "effect-state"); p["state"] != "REJECTED" {
		t.Errorf("reject again: %v", p)
	}
	if after := ts.effect("default", r.Key); !reflect.DeepEqual(after, before) {
		t.Errorf("refused decisions changed the effect:\n%+v\n%+v", before, after)
	}

	// Reject works from APPROVED, without a reason.
	r2 := refund("default", "refund:o-2")
	request(t, ts.s, r2, &c)
	if res := ts.approve("default", r2.Key, hash, "alice"); res.status != 200 {
		t.Fatalf("approve: %d %s", res.status, res.body)
	}
	if res := ts.reject("default", r2.Key, `{"by":"bob"}`); res.status != 200 || ts.effect("default", r2.Key).State != effect.Rejected {
		t.Fatalf("reject an approved effect: %d %s", res.status, res.body)
	}
	// A plain effect, never waiting for a person, cannot be decided.
	if _, err := effect.For(ts.s).Run(context.Background(), "default", "email:1", func(context.Context) (string, error) { return "m", nil }); err != nil {
		t.Fatal(err)
	}
	if p := ts.reject("default", "email:1", `{"by":"bob"}`).wantProblem(t, 409, "effect-state"); p["state"] != "COMPLETED" {
		t.Errorf("reject a completed effect: %v", p)
	}
}

// Tokens: another tenant's token is 403 tenant-forbidden, a read-only
// token lists but cannot decide (403 read-only); nothing changes.
func TestEffectTokens(t *testing.T) {
	ts := newServer(t, &serve.Options{Tokens: []serve.Token{
		{Secret: "acme-rw", Tenant: "acme"}, {Secret: "acme-ro", Tenant: "acme", ReadOnly: true}, {Secret: "beta-rw", Tenant: "beta"},
	}})
	var c calls
	r := refund("acme", "refund:o-1")
	request(t, ts.s, r, &c)
	before := ts.effect("acme", r.Key)
	hash := before.ArgsHash()
	bearer := func(secret string) []string { return []string{"Authorization", "Bearer " + secret} }

	ts.do("GET", "/v1/tenants/acme/effects", nil).wantProblem(t, 401, "unauthorized")
	ts.do("GET", "/v1/tenants/acme/effects", nil, bearer("beta-rw")...).wantProblem(t, 403, "tenant-forbidden")
	ts.approve("acme", r.Key, hash, "mallory", bearer("beta-rw")...).wantProblem(t, 403, "tenant-forbidden")
	ts.reject("acme", r.Key, `{"by":"mallory"}`, bearer("beta-rw")...).wantProblem(t, 403, "tenant-forbidden")
	ts.approve("acme", r.Key, hash, "reader", bearer("acme-ro")...).wantProblem(t, 403, "read-only")
	ts.reject("acme", r.Key, `{"by":"reader"}`, bearer("acme-ro")...).wantProblem(t, 403, "read-only")
	if got := ts.listed(t, "acme", "", bearer("acme-ro")...); len(got) != 1 || str(t, got[0], "key") != r.Key {
		t.Errorf("read-only list: %v", got)
	}
	if after := ts.effect("acme", r.Key); !reflect.DeepEqual(after, before) {
		t.Fatalf("a forbidden decision changed the effect: %+v", after)
	}
	if res := ts.approve("acme", r.Key, hash, "alice", bearer("acme-rw")...); res.status != 200 {
		t.Fatalf("approve with the tenant's token: %d %s", res.status, res.body)
	}
}

// An unknown key, another tenant's key, or an impossible key is 404
// effect-not-found, and nothing changes.
func TestEffectNotFound(t *testing.T) {
	ts := newServer(t, nil)
	var c calls
	r := refund("acme", "refund:o-1")
	request(t, ts.s, r, &c)
	before := ts.effect("acme", r.Key)
	hash := before.ArgsHash()
	for _, p := range []map[string]any{
		ts.approve("acme", "refund:o-404", hash, "alice").wantProblem(t, 404, "effect-not-found"),
		ts.reject("acme", "refund:o-404", `{"by":"alice"}`).wantProblem(t, 404, "effect-not-found"),
		ts.approve("beta", r.Key, hash, "alice").wantProblem(t, 404, "effect-not-found"),
		ts.reject("beta", r.Key, `{"by":"alice"}`).wantProblem(t, 404, "effect-not-found"),
		ts.approve("acme", strings.Repeat("k", 256), hash, "alice").wantProblem(t, 404, "effect-not-found"),
		ts.do("POST", "/v1/tenants/acme/effects//approve", decision(hash, "alice"), "Content-Type", "application/json").wantProblem(t, 404, "effect-not-found"),
	} {
		if p["tenant"] == nil || p["tenant"] == "" {
			t.Errorf("problem without its tenant: %v", p)
		}
	}
	if after := ts.effect("acme", r.Key); !reflect.DeepEqual(after, before) {
		t.Fatalf("changed: %+v", after)
	}
	if got := ts.listed(t, "beta", ""); len(got) != 0 {
		t.Errorf("another tenant's effects listed: %v", got)
	}
	// An empty tenant is not "every tenant".
	ts.do("GET", "/v1/tenants//effects", nil).wantProblem(t, 400, "invalid-tenant")
	ts.do("GET", "/v1/tenants/acme/effects/refund:o-1", nil).wantProblem(t, 404, "not-found")
	ts.do("GET", effectPath("acme", r.Key, "approve"), nil).wantProblem(t, 405, "method-not-allowed")
	ts.do("POST", "/v1/tenants/acme/effects", nil).wantProblem(t, 405, "method-not-allowed")
}

// ?awaiting=true lists only the effects AWAITING_APPROVAL.
func TestEffectListAwaiting(t *testing.T) {
	ts := newServer(t, nil)
	ctx := context.Background()
	var c calls
	request(t, ts.s, refund("default", "k-awaiting"), &c)
	request(t, ts.s, refund("default", "k-approved"), &c)
	request(t, ts.s, refund("other", "k-other"), &c)
	if _, err := effect.For(ts.s).Approve(ctx, effect.Approval{Tenant: "default", Key: "k-approved", ArgsHash: ts.effect("default", "k-approved").ArgsHash(), By: "alice"}); err != nil {
		t.Fatal(err)
	}
	if _, err := effect.For(ts.s).Run(ctx, "default", "k-plain", func(context.Context) (string, error) { return "m", nil }); err != nil {
		t.Fatal(err)
	}
	keys := func(query string) []string {
		var out []string
		for _, m := range ts.listed(t, "default", query) {
			out = append(out, str(t, m, "key"))
		}
		slices.Sort(out)
		return out
	}
	all := []string{"k-approved", "k-awaiting", "k-plain"}
	for query, want := range map[string][]string{"": all, "?awaiting=false": all, "?awaiting=true": {"k-awaiting"}} {
		if got := keys(query); !slices.Equal(got, want) {
			t.Errorf("%q: %v, want %v", query, got, want)
		}
	}
	if p := ts.do("GET", "/v1/tenants/default/effects?awaiting=yes", nil).wantProblem(t, 400, "invalid-parameter"); p["field"] != "awaiting" {
		t.Errorf("awaiting=yes: %v", p)
	}
	if r := ts.do("HEAD", "/v1/tenants/default/effects", nil); r.status != 200 || len(r.body) != 0 {
		t.Errorf("HEAD: %d %q", r.status, r.body)
	}
}

// A decision's body is one JSON object of known string members, sent as
// application/json; by and reason follow the attribute rules. Every
// refusal changes nothing.
func TestEffectDecisionBody(t *testing.T) {
	ts := newServer(t, nil)
	var c calls
	r := refund("default", "refund:o-1")
	request(t, ts.s, r, &c)
	before := ts.effect("default", r.Key)
	h := before.ArgsHash()
	approve := effectPath("default", r.Key, "approve")
	reject := effectPath("default", r.Key, "reject")
	long := strings.Repeat("x", 1025)
	for _, tc := range []struct {
		name, path, ct, body string
		status               int
		problem, field       string
	}{
		{"no content type", approve, "", `{"args_hash":"` + h + `","by":"a"}`, 415, "unsupported-media-type", "Content-Type"},
		{"a form", approve, "application/x-www-form-urlencoded", "args_hash=" + h + "&by=a", 415, "unsupported-media-type", "Content-Type"},
		{"text/plain", approve, "text/plain", `{"args_hash":"` + h + `","by":"a"}`, 415, "unsupported-media-type", "Content-Type"},
		{"empty", approve, "application/json", ``, 400, "invalid-body", ""},
		{"malformed", approve, "application/json", `{"args_hash":"` + h + `","by":`, 400, "invalid-body", "by"},
		{"an array", approve, "application/json", `[]`, 400, "invalid-body", ""},
		{"data after", approve, "application/json", `{"args_hash":"` + h + `","by":"a"} {}`, 400, "invalid-body", ""},
		{"invalid UTF-8", approve, "application/json", `{"args_hash":"` + h + `","by":"a` + "\xff" + `"}`, 400, "invalid-body", ""},
		{"unknown member", approve, "application/json", `{"args_hash":"` + h + `","by":"a","reason":"x"}`, 400, "invalid-body", "reason"},
		{"twice", approve, "application/json", `{"args_hash":"` + h + `","by":"a","by":"b"}`, 400, "invalid-body", "by"},
		{"by missing", approve, "application/json", `{"args_hash":"` + h + `"}`, 400, "invalid-body", "by"},
		{"hash missing", approve, "application/json", `{"by":"a"}`, 400, "invalid-body", "args_hash"},
		{"by empty", approve, "application/json", `{"args_hash":"` + h + `","by":""}`, 400, "invalid-body", "by"},
		{"by null", approve, "application/json", `{"args_hash":"` + h + `","by":null}`, 400, "invalid-body", "by"},
		{"by a number", approve, "application/json", `{"args_hash":"` + h + `","by":1}`, 400, "invalid-body", "by"},
		{"hash a number", approve, "application/json", `{"args_hash":1,"by":"a"}`, 400, "invalid-body", "args_hash"},
		{"by with a lone surrogate", approve, "application/json", `{"args_hash":"` + h + `","by":"a\ud800"}`, 400, "invalid-body", ""},
		{"by with a tab", approve, "application/json", `{"args_hash":"` + h + `","by":"a\tb"}`, 400, "invalid-body", "by"},
		{"by with edge space", approve, "application/json", `{"args_hash":"` + h + `","by":" a"}`, 400, "invalid-body", "by"},
		{"by too long", approve, "application/json", `{"args_hash":"` + h + `","by":"` + long + `"}`, 413, "too-large", "by"},
		{"body too large", approve, "application/json", `{"args_hash":"` + h + `","by":"` + strings.Repeat(`\u0041`, serve.MaxDecisionBytes/6+1) + `"}`, 413, "too-large", "body"},
		{"reject: by missing", reject, "application/json", `{"reason":"no"}`, 400, "invalid-body", "by"},
		{"reject: args_hash", reject, "application/json", `{"by":"a","args_hash":"` + h + `"}`, 400, "invalid-body", "args_hash"},
		{"reject: reason with a control", reject, "application/json", `{"by":"a","reason":"no\u0001"}`, 400, "invalid-body", "reason"},
		{"reject: reason too long", reject, "application/json", `{"by":"a","reason":"` + long + `"}`, 413, "too-large", "reason"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var header []string
			if tc.ct != "" {
				header = []string{"Content-Type", tc.ct}
			}
			p := ts.do("POST", tc.path, []byte(tc.body), header...).wantProblem(t, tc.status, tc.problem)
			if field, _ := p["field"].(string); field != tc.field {
				t.Errorf("field %q, want %q: %v", field, tc.field, p)
			}
			if after := ts.effect("default", r.Key); !reflect.DeepEqual(after, before) {
				t.Fatalf("a refused body changed the effect: %+v", after)
			}
		})
	}
	if len(c.got()) != 0 {
		t.Fatal("a refused decision ran the effect")
	}
}

// The OpenAPI document's Effect schema names exactly the members sent.
func TestEffectOpenAPISchema(t *testing.T) {
	ts := newServer(t, nil)
	var doc struct {
		Components struct {
			Schemas map[string]struct {
				Properties map[string]any `json:"properties"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(ts.do("GET", "/openapi.json", nil).body, &doc); err != nil {
		t.Fatal(err)
	}
	var got []string
	for name := range doc.Components.Schemas["Effect"].Properties {
		got = append(got, name)
	}
	slices.Sort(got)
	want := slices.Sorted(slices.Values(effectFields))
	if !slices.Equal(got, want) {
		t.Errorf("Effect schema %v, want %v", got, want)
	}
}
