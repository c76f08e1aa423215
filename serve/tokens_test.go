package serve_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/eventlite/eventlite/serve"
	"github.com/eventlite/eventlite/store/storetest"
)

// Tokens: no or unknown token 401 with WWW-Authenticate; another tenant
// 403 tenant-forbidden; :ro refused writes (403 read-only); * sees every
// tenant and the store-wide paths; /healthz and /openapi.json are open.
func TestTokens(t *testing.T) {
	ts := newServer(t, &serve.Options{Tokens: []serve.Token{
		{Secret: "acme-rw", Tenant: "acme"},
		{Secret: "acme-ro", Tenant: "acme", ReadOnly: true},
		{Secret: "root", Tenant: serve.AllTenants},
	}})
	auth := func(secret string) []string { return []string{"Authorization", "Bearer " + secret} }
	post := func(tenant, secret, id string) response {
		return ts.do("POST", streamEvents(tenant, "s"), structured(id, "t", ""), append(auth(secret), "Content-Type", ctStructured)...)
	}
	for _, h := range [][]string{nil, auth("wrong"), auth("acme-rw-"), auth("acme-r"), {"Authorization", "Basic acme-rw"}} {
		r := ts.do("GET", "/v1/tenants/acme/events", nil, h...)
		r.wantProblem(t, 401, "unauthorized")
		if r.header.Get("WWW-Authenticate") != `Bearer realm="eventlite"` {
			t.Errorf("%q: WWW-Authenticate %q", h, r.header.Get("WWW-Authenticate"))
		}
	}
	if r := post("acme", "acme-rw", "a"); r.status != 201 {
		t.Fatalf("acme-rw: %d %s", r.status, r.body)
	}
	post("other", "acme-rw", "b").wantProblem(t, 403, "tenant-forbidden")
	ts.do("GET", "/v1/tenants/other/events", nil, auth("acme-rw")...).wantProblem(t, 403, "tenant-forbidden")
	post("acme", "acme-ro", "c").wantProblem(t, 403, "read-only")
	if r := ts.do("GET", "/v1/tenants/acme/events", nil, auth("acme-ro")...); r.status != 200 {
		t.Errorf("acme-ro read: %d", r.status)
	}
	if r := post("other", "root", "d"); r.status != 201 {
		t.Errorf("root write: %d %s", r.status, r.body)
	}
	for _, p := range []string{"/v1/doctor", "/v1/consumers", "/metrics"} {
		ts.do("GET", p, nil, auth("acme-rw")...).wantProblem(t, 403, "tenant-forbidden")
		ts.do("GET", p, nil).wantProblem(t, 401, "unauthorized")
		if r := ts.do("GET", p, nil, auth("root")...); r.status != 200 {
			t.Errorf("%s with *: %d %s", p, r.status, r.body)
		}
	}
	for _, p := range []string{"/healthz", "/openapi.json"} {
		if r := ts.do("GET", p, nil); r.status != 200 {
			t.Errorf("%s without a token: %d", p, r.status)
		}
	}
	if r := ts.do("GET", "/v1/info", nil, auth("acme-ro")...); r.status != 200 {
		t.Errorf("/v1/info: %d", r.status)
	}
	if h := ts.head(); h != 2 {
		t.Errorf("head %d, want 2", h)
	}
}

func TestParseTokens(t *testing.T) {
	got, err := serve.ParseTokens(strings.NewReader("# comment\n\na=acme\n  b=acme:ro  \nc=*\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := []serve.Token{{Secret: "a", Tenant: "acme"}, {Secret: "b", Tenant: "acme", ReadOnly: true}, {Secret: "c", Tenant: "*"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	for _, bad := range []string{"noequals", "=acme", "s=", "s= acme", "s=a b"} {
		if _, err := serve.ParseToken(bad); err == nil {
			t.Errorf("%q accepted", bad)
		} else if strings.Contains(err.Error(), "noequals") && bad == "noequals" {
			t.Errorf("%q: the error shows the secret: %v", bad, err)
		}
	}
	if _, err := serve.ParseTokens(strings.NewReader("ok=acme\nbad\n")); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("bad line: %v", err)
	}
}

// TestDuplicateTokenSecrets: two tokens with one secret are refused at
// start with a *TokenError naming both by place and tenant, never the
// secret: the first match would otherwise decide what the second token's
// holder may do.
func TestDuplicateTokenSecrets(t *testing.T) {
	s := storetest.MustOpen(t, nil)
	for _, tc := range []struct {
		name   string
		tokens []serve.Token
		want   serve.TokenError
	}{
		{"same tenant", []serve.Token{{Secret: "s3cret", Tenant: "a"}, {Secret: "s3cret", Tenant: "a", ReadOnly: true}}, serve.TokenError{Index: 2, Tenant: "a", Same: 1, SameTenant: "a"}},
		{"other tenant", []serve.Token{{Secret: "x", Tenant: "a"}, {Secret: "s3cret", Tenant: "a"}, {Secret: "s3cret", Tenant: "*"}}, serve.TokenError{Index: 3, Tenant: "*", Same: 2, SameTenant: "a"}},
		{"empty", []serve.Token{{Secret: "x", Tenant: "a"}, {Secret: "", Tenant: "b"}}, serve.TokenError{Index: 2, Tenant: "b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, err := serve.New(s, &serve.Options{Tokens: tc.tokens})
			var te *serve.TokenError
			if !errors.As(err, &te) {
				if h != nil {
					_ = h.Close()
				}
				t.Fatalf("New: %v, want a *TokenError", err)
			}
			if diff := cmp.Diff(tc.want, *te); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if strings.Contains(err.Error(), "s3cret") {
				t.Errorf("the error shows the secret: %v", err)
			}
			if v := serve.ValidateTokens(tc.tokens); v == nil || v.Error() != err.Error() {
				t.Errorf("ValidateTokens: %v, want New's %v", v, err)
			}
		})
	}
}
