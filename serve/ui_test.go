package serve_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/eventlite/eventlite/serve"
)

// The page's three files are served from the binary without a token, with
// a Content-Security-Policy that allows the page's own script only.
func TestUIFiles(t *testing.T) {
	ts := newServer(t, &serve.Options{Tokens: []serve.Token{{Secret: "s3cret", Tenant: "a"}}})
	for path, ct := range map[string]string{"/": "text/html", "/ui/app.js": "text/javascript", "/ui/app.css": "text/css"} {
		r := ts.do("GET", path, nil)
		if r.status != 200 || !strings.HasPrefix(r.header.Get("Content-Type"), ct) || len(r.body) == 0 {
			t.Fatalf("%s: %d %q", path, r.status, r.header.Get("Content-Type"))
		}
		if csp := r.header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || !strings.Contains(csp, "default-src 'none'") {
			t.Fatalf("%s: CSP %q", path, csp)
		}
		if r.header.Get("X-Content-Type-Options") != "nosniff" {
			t.Fatalf("%s: no nosniff", path)
		}
	}
	if b := ts.do("GET", "/", nil).body; strings.Contains(string(b), "http://") || strings.Contains(string(b), "https://") {
		t.Fatalf("the page loads something from elsewhere:\n%s", b)
	}
	ts.do("POST", "/", nil).wantProblem(t, 405, "method-not-allowed")
	ts.do("GET", "/ui/session", nil).wantProblem(t, 405, "method-not-allowed")
	ts.do("GET", "/ui/other.js", nil).wantProblem(t, 404, "not-found")
}

// session exchanges a token for the page's cookie.
func session(t testing.TB, ts *testServer, token string) (*http.Cookie, response) {
	t.Helper()
	r := ts.do("POST", "/ui/session", []byte(`{"token":"`+token+`"}`), "Content-Type", "application/json", "Sec-Fetch-Site", "same-origin")
	res := http.Response{Header: r.header}
	for _, c := range res.Cookies() {
		if c.Name == serve.SessionCookie {
			return c, r
		}
	}
	return nil, r
}

// The token is exchanged for an HttpOnly, SameSite=Strict, Path=/ cookie
// that reads like the token; a change made with the cookie needs
// Sec-Fetch-Site: same-origin or the server's own Origin.
func TestSessionCookie(t *testing.T) {
	ts := newServer(t, &serve.Options{Tokens: []serve.Token{{Secret: "s3cret", Tenant: "a"}, {Secret: "ro", Tenant: "a", ReadOnly: true}}})
	if c, r := session(t, ts, "wrong"); c != nil || r.status != 401 {
		t.Fatalf("a wrong token: %d, cookie %v", r.status, c)
	}
	ts.do("POST", "/ui/session", []byte("token=s3cret"), "Content-Type", "application/x-www-form-urlencoded").wantProblem(t, 415, "unsupported-media-type")
	ts.do("POST", "/ui/session", []byte(`{"token":"s3cret"}`), "Content-Type", "application/json", "Sec-Fetch-Site", "cross-site").wantProblem(t, 403, "cross-site")

	c, r := session(t, ts, "s3cret")
	if c == nil || r.status != 200 {
		t.Fatalf("exchange: %d %s", r.status, r.body)
	}
	raw := r.header.Get("Set-Cookie")
	for _, attr := range []string{"HttpOnly", "SameSite=Strict", "Path=/"} {
		if !strings.Contains(raw, attr) {
			t.Fatalf("Set-Cookie %q lacks %s", raw, attr)
		}
	}
	if strings.Contains(raw, "s3cret") || len(c.Value) < 40 {
		t.Fatalf("the cookie is not a fresh random value: %q", raw)
	}
	if m := r.json(t); m["tenant"] != "a" || m["read_only"] != false {
		t.Fatalf("exchange answer: %v", m)
	}
	cookie := c.Name + "=" + c.Value
	if tn := ts.do("GET", "/v1/tenants", nil, "Cookie", cookie).json(t); tn["session"] != true || tn["all"] != false {
		t.Fatalf("tenants with the cookie: %v", tn)
	}
	if r := ts.do("GET", "/v1/tenants/a/events", nil, "Cookie", cookie); r.status != 200 {
		t.Fatalf("read with the cookie: %d %s", r.status, r.body)
	}
	ts.do("GET", "/v1/tenants/b/events", nil, "Cookie", cookie).wantProblem(t, 403, "tenant-forbidden")
	ts.do("GET", "/v1/tenants/a/events", nil, "Cookie", c.Name+"=AAAA").wantProblem(t, 401, "unauthorized")

	// Writes with the cookie: refused without proof of the page's origin,
	// nothing stored.
	post := func(header ...string) response {
		h := append([]string{"Cookie", cookie, "Content-Type", "application/json", "ce-type", "t"}, header...)
		return ts.do("POST", streamEvents("a", "s"), []byte(`{}`), h...)
	}
	for _, h := range [][]string{
		nil,
		{"Sec-Fetch-Site", "cross-site"},
		{"Sec-Fetch-Site", "same-site"}, // another port of the same host
		{"Origin", "http://evil.example"},
		{"Origin", "http://evil.example", "Sec-Fetch-Site", "cross-site"},
		{"Sec-Fetch-Site", "cross-site", "Origin", ts.url}, // the browser's word wins
	} {
		post(h...).wantProblem(t, 403, "cross-site")
	}
	if evs := ts.events("a", "s"); len(evs) != 0 {
		t.Fatalf("a refused write stored %d events", len(evs))
	}
	if r := post("Sec-Fetch-Site", "same-origin"); r.status != 201 {
		t.Fatalf("same-origin: %d %s", r.status, r.body)
	}
	if r := post("Origin", ts.url); r.status != 201 {
		t.Fatalf("own Origin: %d %s", r.status, r.body)
	}
	// A bearer token is not a browser's ambient credential: no rule.
	if r := ts.do("POST", streamEvents("a", "s"), []byte(`{}`), "Authorization", "Bearer s3cret", "Content-Type", "application/json", "ce-type", "t"); r.status != 201 {
		t.Fatalf("bearer: %d %s", r.status, r.body)
	}
	// A read-only token's session stays read-only.
	roc, _ := session(t, ts, "ro")
	ts.do("POST", streamEvents("a", "s"), []byte(`{}`), "Cookie", roc.Name+"="+roc.Value, "Sec-Fetch-Site", "same-origin",
		"Content-Type", "application/json", "ce-type", "t").wantProblem(t, 403, "read-only")

	// Signing out: refused cross-site, then the cookie is worth nothing.
	ts.do("DELETE", "/ui/session", nil, "Cookie", cookie, "Sec-Fetch-Site", "cross-site").wantProblem(t, 403, "cross-site")
	if r := ts.do("DELETE", "/ui/session", nil, "Cookie", cookie, "Sec-Fetch-Site", "same-origin"); r.status != 204 || !strings.Contains(r.header.Get("Set-Cookie"), "Max-Age=0") {
		t.Fatalf("sign out: %d %v", r.status, r.header)
	}
	ts.do("GET", "/v1/tenants/a/events", nil, "Cookie", cookie).wantProblem(t, 401, "unauthorized")
}

// A cross-site form post is refused: with the cookie (the rule above), and
// without tokens, where another site's page could otherwise write to a
// server on loopback; an origin allowed by --cors-origin may.
func TestCrossSiteFormPost(t *testing.T) {
	ts := newServer(t, &serve.Options{CORSOrigins: []string{"http://allowed.example"}})
	form := func(origin, site string) response {
		return ts.do("POST", streamEvents("default", "s"), []byte("a=b"), "Content-Type", "application/x-www-form-urlencoded",
			"Origin", origin, "Sec-Fetch-Site", site)
	}
	form("http://evil.example", "cross-site").wantProblem(t, 403, "cross-site")
	ts.do("POST", "/v1/tenants/default/dead-letters/x/retry", nil, "Origin", "http://evil.example", "Sec-Fetch-Site", "cross-site").
		wantProblem(t, 403, "cross-site")
	form("http://allowed.example", "cross-site").wantProblem(t, 415, "unsupported-media-type") // past the rule
	if evs := ts.events("default", "s"); len(evs) != 0 {
		t.Fatalf("stored %d events", len(evs))
	}
	// curl and SDKs send neither header.
	if r := ts.do("POST", streamEvents("default", "s"), []byte(`{}`), "Content-Type", "application/json", "ce-type", "t"); r.status != 201 {
		t.Fatalf("a plain client: %d %s", r.status, r.body)
	}
}
