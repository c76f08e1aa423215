package serve_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/eventlite/eventlite/internal/hostguard"
	"github.com/eventlite/eventlite/serve"
)

// doHost sends one request with the given Host header (the connection
// goes to the test server on 127.0.0.1 whatever the Host says).
func (ts *testServer) doHost(host, method, path string, body []byte, header ...string) response {
	ts.t.Helper()
	req, err := http.NewRequest(method, ts.url+path, strings.NewReader(string(body)))
	if err != nil {
		ts.t.Fatal(err)
	}
	req.Host = host
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Add(header[i], header[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		ts.t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		ts.t.Fatal(err)
	}
	return response{status: res.StatusCode, header: res.Header, body: b}
}

func (ts *testServer) port() string {
	u, _ := url.Parse(ts.url)
	return u.Port()
}

// DNS rebinding: a page on evil.example:PORT whose name now resolves to
// 127.0.0.1 sends its own name in Host and Origin. Without tokens that
// append answered 201; every path, /healthz and the page included, now
// answers 403 host-not-allowed before any handler, tokens or not.
func TestHostRebinding(t *testing.T) {
	for _, tokens := range [][]serve.Token{nil, {{Secret: "s3cret", Tenant: "*"}}} {
		ts := newServer(t, &serve.Options{Tokens: tokens})
		evil := "evil.example:" + ts.port()
		auth := []string{"Origin", "http://" + evil, "Content-Type", ctStructured}
		if tokens != nil {
			auth = append(auth, "Authorization", "Bearer s3cret")
		}
		ts.doHost(evil, "POST", streamEvents("default", "order-1"), structured("e1", "order.placed", `{}`), auth...).
			wantProblem(t, 403, hostguard.Problem)
		if got := ts.events("default", "order-1"); len(got) != 0 {
			t.Fatalf("the rebound page stored %d events", len(got))
		}
		for _, path := range []string{"/healthz", "/", "/v1/tenants/default/events", "/openapi.json", "/ui/session"} {
			ts.doHost(evil, "GET", path, nil, auth...).wantProblem(t, 403, hostguard.Problem)
		}
		// HTTP/1.0 may leave Host out: no name is no allowed name.
		_, br := rawRequest(t, ts, "GET /healthz HTTP/1.0", "", false)
		readResponse(t, br).wantProblem(t, 403, hostguard.Problem)
	}
	if hostguard.TypeBase != serve.ProblemTypeBase {
		t.Fatalf("hostguard's problem type base %q is not serve's %q", hostguard.TypeBase, serve.ProblemTypeBase)
	}
}

// Names that cannot be rebound are served whatever the port: localhost,
// IPv4 and IPv6 literals; more names with AllowedHosts, in any case.
func TestHostAllowed(t *testing.T) {
	ts := newServer(t, &serve.Options{AllowedHosts: []string{"Events.Internal"}})
	for _, host := range []string{"localhost:" + ts.port(), "LOCALHOST", "localhost.:1", "127.0.0.1:" + ts.port(), "127.0.0.1",
		"[::1]:" + ts.port(), "[::1]", "10.1.2.3:80", "[fe80::1]:9", "events.internal:8443", "EVENTS.internal"} {
		if r := ts.doHost(host, "GET", "/healthz", nil); r.status != 200 {
			t.Errorf("Host %q: %d %s", host, r.status, r.body)
		}
	}
	for _, host := range []string{"events.internal.evil.example", "localhost.evil.example:80", "127.0.0.1.nip.io", "x.events.internal"} {
		ts.doHost(host, "GET", "/healthz", nil).wantProblem(t, 403, hostguard.Problem)
	}
	for _, bad := range []string{"", "events.internal:80", "http://events.internal", "a b"} {
		if _, err := serve.New(ts.s, &serve.Options{AllowedHosts: []string{bad}}); err == nil || !strings.Contains(err.Error(), "AllowedHosts") {
			t.Errorf("AllowedHosts %q: %v", bad, err)
		}
	}
}

// rawRequest opens a connection to ts and sends head (the request line
// and headers, without the blank line) and then the first bytes of body.
func rawRequest(t *testing.T, ts *testServer, head string, body string, host ...bool) (net.Conn, *bufio.Reader) {
	t.Helper()
	u, _ := url.Parse(ts.url)
	c, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if len(host) == 0 || host[0] {
		head += "\r\nHost: " + u.Host
	}
	if _, err := io.WriteString(c, head+"\r\n\r\n"+body); err != nil {
		t.Fatal(err)
	}
	return c, bufio.NewReader(c)
}

func readResponse(t *testing.T, br *bufio.Reader) response {
	t.Helper()
	res, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return response{status: res.StatusCode, header: res.Header, body: b}
}

// A body that stalls is cut with 408 request-timeout after the grace
// (shortened here), and nothing is stored; a body sent at once is taken.
func TestStalledBody(t *testing.T) {
	ts := newServer(t, &serve.Options{BodyGrace: 100 * time.Millisecond, MinBodyRate: 1 << 20})
	ev := string(structured("e1", "order.placed", `{"n":1}`))
	_, br := rawRequest(t, ts, "POST "+streamEvents("default", "order-1")+" HTTP/1.1\r\nContent-Type: "+ctStructured+
		"\r\nContent-Length: "+strconv.Itoa(len(ev)), ev[:10])
	readResponse(t, br).wantProblem(t, 408, "request-timeout")
	if got := ts.events("default", "order-1"); len(got) != 0 {
		t.Fatalf("a cut body stored %d events", len(got))
	}
	// The session exchange, which needs no token, is cut the same way.
	_, br = rawRequest(t, ts, "POST /ui/session HTTP/1.1\r\nContent-Type: application/json\r\nContent-Length: 100", `{"tok`)
	readResponse(t, br).wantProblem(t, 408, "request-timeout")

	if r := ts.do("POST", streamEvents("default", "order-1"), []byte(ev), "Content-Type", ctStructured); r.status != 201 {
		t.Fatalf("a body sent at once: %d %s", r.status, r.body)
	}
}

// A live reader sends no body: the body rules never cut it, however long
// it stays (here three heartbeats past a 1 ms grace and a minimum rate
// that no body could meet).
func TestLiveExemptFromBodyRules(t *testing.T) {
	ts := newServer(t, &serve.Options{BodyGrace: time.Millisecond, MinBodyRate: 1 << 30})
	req, _ := http.NewRequest("GET", ts.url+"/v1/tenants/default/events?heartbeat=100ms", nil)
	req.Header.Set("Accept", "text/event-stream")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != 200 {
		t.Fatalf("live read: %s", res.Status)
	}
	live := bufio.NewReader(res.Body)
	beats := 0
	for beats < 3 {
		line, err := live.ReadString('\n')
		if err != nil {
			t.Fatalf("the live stream ended after %d heartbeats: %v", beats, err)
		}
		if strings.HasPrefix(line, ": hb") {
			beats++
		}
	}
	if r := ts.do("POST", streamEvents("default", "s"), structured("e1", "t", ""), "Content-Type", ctStructured); r.status != 201 {
		t.Fatalf("append: %d %s", r.status, r.body)
	}
	for {
		line, err := live.ReadString('\n')
		if err != nil {
			t.Fatalf("the live stream ended: %v", err)
		}
		if strings.HasPrefix(line, "id: 1") {
			return
		}
	}
}

// The bodies held at once are bounded: while one request holds 800 of
// 1,000 bytes (it got 100 Continue, so its budget is taken, and sends
// nothing more), a 300-byte body is answered 503 busy with Retry-After;
// once the first ends, the same body is taken.
func TestBodyMemoryBound(t *testing.T) {
	ts := newServer(t, &serve.Options{MaxBufferedBodyBytes: 1000})
	pad := func(n int) string {
		ev := string(structured("e-"+strconv.Itoa(n), "t", `{"p":""}`))
		return string(structured("e-"+strconv.Itoa(n), "t", `{"p":"`+strings.Repeat("x", n-len(ev))+`"}`))
	}
	big, small := pad(800), pad(300)
	if len(big) != 800 || len(small) != 300 {
		t.Fatalf("bodies of %d and %d bytes", len(big), len(small))
	}
	c, br := rawRequest(t, ts, "POST "+streamEvents("default", "big")+" HTTP/1.1\r\nContent-Type: "+ctStructured+
		"\r\nExpect: 100-continue\r\nContent-Length: 800", "")
	if line, err := br.ReadString('\n'); err != nil || !strings.HasPrefix(line, "HTTP/1.1 100") {
		t.Fatalf("no 100 Continue: %q %v", line, err)
	}
	if _, err := br.ReadString('\n'); err != nil { // the blank line after 100 Continue
		t.Fatal(err)
	}
	r := ts.do("POST", streamEvents("default", "small"), []byte(small), "Content-Type", ctStructured)
	r.wantProblem(t, 503, "busy")
	if r.header.Get("Retry-After") == "" {
		t.Fatal("503 without Retry-After")
	}
	if _, err := io.WriteString(c, big); err != nil {
		t.Fatal(err)
	}
	if r := readResponse(t, br); r.status != 201 {
		t.Fatalf("the big body: %d %s", r.status, r.body)
	}
	if r := ts.do("POST", streamEvents("default", "small"), []byte(small), "Content-Type", ctStructured); r.status != 201 {
		t.Fatalf("after the big body ended: %d %s", r.status, r.body)
	}
}

// One token's sessions never end another's: 10,001 sessions made with a
// second token (its own cap passed ten times), and the first token's
// cookie still works.
func TestSessionsPerToken(t *testing.T) {
	ts := newServer(t, &serve.Options{Tokens: []serve.Token{{Secret: "admin", Tenant: "*"}, {Secret: "viewer", Tenant: "b", ReadOnly: true}}})
	c, r := session(t, ts, "admin")
	if c == nil {
		t.Fatalf("exchange: %d %s", r.status, r.body)
	}
	n := 10001
	if testing.Short() {
		n = serve.MaxSessionsPerToken + 1
	}
	for i := range n {
		r := ts.do("POST", "/ui/session", []byte(`{"token":"viewer"}`), "Content-Type", "application/json", "Sec-Fetch-Site", "same-origin")
		if r.status != 200 {
			t.Fatalf("session %d: %d %s", i, r.status, r.body)
		}
	}
	if r := ts.do("GET", "/v1/tenants/a/events", nil, "Cookie", c.Name+"="+c.Value); r.status != 200 {
		t.Fatalf("the first token's cookie after %d sessions of another token: %d %s", n, r.status, r.body)
	}
}

// lineWriter passes each access log line on a channel.
type lineWriter chan string

func (lw lineWriter) Write(p []byte) (int, error) {
	lw <- string(p)
	return len(p), nil
}

// The access log: one JSON line per request with the route's pattern, the
// status, bytes, duration, tenant and the token's index and tenant; no
// stream id, event id, secret, header or body.
func TestAccessLog(t *testing.T) {
	lines := make(lineWriter, 16)
	ts := newServer(t, &serve.Options{AccessLog: lines, Tokens: []serve.Token{{Secret: "first-secret", Tenant: "*"}, {Secret: "second-secret", Tenant: "acme"}}})
	stream, id := "customer-jane.doe@example.com", "event-id-4711"
	r := ts.do("POST", streamEvents("acme", stream), structured(id, "order.placed", `{"who":"jane"}`),
		"Content-Type", ctStructured, "Authorization", "Bearer second-secret", "X-Private", "header-value")
	if r.status != 201 {
		t.Fatalf("append: %d %s", r.status, r.body)
	}
	line := <-lines
	var got map[string]any
	if err := json.Unmarshal([]byte(line), &got); err != nil || !strings.HasSuffix(line, "}\n") || strings.Count(line, "\n") != 1 {
		t.Fatalf("line %q: %v", line, err)
	}
	want := map[string]any{"method": "POST", "route": "/v1/tenants/{tenant}/streams/{stream}/events", "status": float64(201),
		"tenant": "acme", "token_index": float64(1), "token_tenant": "acme"}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v (line %s)", k, got[k], v, line)
		}
	}
	if b, _ := got["bytes"].(float64); b != float64(len(r.body)) {
		t.Errorf("bytes %v, body %d", got["bytes"], len(r.body))
	}
	if d, ok := got["duration_ms"].(float64); !ok || d < 0 {
		t.Errorf("duration_ms %v", got["duration_ms"])
	}
	if _, err := time.Parse(time.RFC3339Nano, fmt.Sprint(got["time"])); err != nil {
		t.Errorf("time: %v", err)
	}
	for _, secret := range []string{stream, id, "jane", "second-secret", "first-secret", "header-value", "Bearer"} {
		if strings.Contains(line, secret) {
			t.Errorf("the line holds %q: %s", secret, line)
		}
	}
	if len(got) != 9 {
		t.Errorf("%d fields, want 9: %s", len(got), line)
	}

	// Unauthenticated: no token; the event's own path leaves out the
	// stream and version.
	ts.do("GET", streamEvents("acme", stream)+"/1", nil)
	line = <-lines
	if !strings.Contains(line, `"route":"/v1/tenants/{tenant}/streams/{stream}/events/{version}"`) || !strings.Contains(line, `"status":401`) ||
		strings.Contains(line, "token") || strings.Contains(line, stream) {
		t.Errorf("401 line: %s", line)
	}
	// A session is the token it was made with.
	c, _ := session(t, ts, "first-secret")
	<-lines
	ts.do("GET", "/v1/stats", nil, "Cookie", c.Name+"="+c.Value)
	if line := <-lines; !strings.Contains(line, `"token_index":0,"token_tenant":"*"`) || !strings.Contains(line, `"route":"/v1/stats"`) {
		t.Errorf("cookie line: %s", line)
	}
}

// Failed authentications are limited per client address: past the burst
// a failure answers 429 too-many-failures with Retry-After, on the API
// and on POST /ui/session; a valid token from the same address is never
// refused, and another address is counted apart.
func TestAuthFailureLimit(t *testing.T) {
	ts := newServer(t, &serve.Options{AuthFailureBurst: 3, AuthFailureInterval: time.Hour,
		Tokens: []serve.Token{{Secret: "s3cret", Tenant: "*"}}})
	path := "/v1/tenants/default/events"
	for i := range 3 {
		ts.do("GET", path, nil, "Authorization", "Bearer guess-"+strconv.Itoa(i)).wantProblem(t, 401, "unauthorized")
	}
	r := ts.do("GET", path, nil, "Authorization", "Bearer guess-3")
	r.wantProblem(t, 429, "too-many-failures")
	if ra, err := strconv.Atoi(r.header.Get("Retry-After")); err != nil || ra < 1 || ra > 3600 {
		t.Fatalf("Retry-After %q", r.header.Get("Retry-After"))
	}
	if c, r := session(t, ts, "guess-4"); c != nil || r.status != 429 {
		t.Fatalf("a wrong session token past the limit: %d %s", r.status, r.body)
	}
	// The valid token still works, by header and by session.
	if r := ts.do("GET", path, nil, "Authorization", "Bearer s3cret"); r.status != 200 {
		t.Fatalf("a valid token past the limit: %d %s", r.status, r.body)
	}
	if c, r := session(t, ts, "s3cret"); c == nil {
		t.Fatalf("a valid session exchange past the limit: %d %s", r.status, r.body)
	}
	// Another address (127.0.0.2 is loopback too) has its own count.
	dialer := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}}
	other := &http.Client{Transport: &http.Transport{DialContext: dialer.DialContext}}
	req, _ := http.NewRequestWithContext(context.Background(), "GET", ts.url+path, nil)
	req.Header.Set("Authorization", "Bearer guess-5")
	res, err := other.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 401 {
		t.Fatalf("another address: %d", res.StatusCode)
	}
}
