package serve_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/eventlite/eventlite/internal/inside"

	"github.com/eventlite/eventlite/internal/outboxmark"
	"github.com/eventlite/eventlite/serve"
	"github.com/eventlite/eventlite/store"
)

func TestHealthzInfo(t *testing.T) {
	ts := newServer(t, nil)
	if r := ts.do("GET", "/healthz", nil); r.status != 200 || r.json(t)["status"] != "ok" {
		t.Errorf("healthz: %d %s", r.status, r.body)
	}
	info := ts.do("GET", "/v1/info", nil).json(t)
	limits, _ := info["limits"].(map[string]any)
	if info["schema"] != float64(store.SchemaVersion()) || limits["body_bytes"] != float64(serve.MaxBodyBytes) ||
		limits["data_bytes"] != float64(512<<10) || limits["read_limit"] != 1000.0 || info["version"] == "" {
		t.Errorf("info: %v", info)
	}
}

// /openapi.json is OpenAPI 3.1 and documents every route.
func TestOpenAPI(t *testing.T) {
	ts := newServer(t, nil)
	r := ts.do("GET", "/openapi.json", nil)
	var doc struct {
		OpenAPI string                    `json:"openapi"`
		Paths   map[string]map[string]any `json:"paths"`
	}
	if err := json.Unmarshal(r.body, &doc); err != nil || r.status != 200 {
		t.Fatalf("%d: %v", r.status, err)
	}
	if doc.OpenAPI != "3.1.0" {
		t.Errorf("openapi %q", doc.OpenAPI)
	}
	routes := map[string][]string{
		"/healthz": {"get"}, "/openapi.json": {"get"}, "/metrics": {"get"}, "/v1/info": {"get"}, "/v1/consumers": {"get"}, "/v1/doctor": {"get"},
		"/v1/tenants/{tenant}/streams":                           {"get"},
		"/v1/tenants/{tenant}/streams/{stream}":                  {"get", "delete"},
		"/v1/tenants/{tenant}/streams/{stream}/truncate":         {"post"},
		"/v1/tenants/{tenant}/streams/{stream}/events":           {"get", "post"},
		"/v1/tenants/{tenant}/streams/{stream}/events/{version}": {"get"},
		"/v1/tenants/{tenant}/events":                            {"get", "post"},
		"/v1/tenants/{tenant}/dead-letters/{eventId}/retry":      {"post"},
		"/v1/tenants/{tenant}/effects":                           {"get"},
		"/v1/tenants/{tenant}/effects/{key}/approve":             {"post"},
		"/v1/tenants/{tenant}/effects/{key}/reject":              {"post"},
		// The web page's routes.
		"/v1/stats": {"get"}, "/v1/tenants": {"get"}, "/v1/tenants/{tenant}/stats": {"get"}, "/v1/tenants/{tenant}/types": {"get"},
		"/v1/tenants/{tenant}/events/{eventId}": {"get"}, "/v1/tenants/{tenant}/dead-letters": {"get"},
		"/v1/tenants/{tenant}/query": {"post"},
		"/ui/session":                {"post", "delete"},
		// The operator's actions.
		"/v1/tenants/{tenant}/dead-letters/{eventId}/discard": {"post"},
		"/v1/quarantine": {"get"}, "/v1/tenants/{tenant}/quarantine": {"get"},
		"/v1/quarantine/{name}/{eventId}/retry": {"post"}, "/v1/quarantine/{name}/{eventId}/skip": {"post"},
	}
	for p, ms := range routes {
		for _, m := range ms {
			if doc.Paths[p][m] == nil {
				t.Errorf("%s %s undocumented", m, p)
			}
		}
	}
	if len(doc.Paths) != len(routes) {
		t.Errorf("%d paths documented, want %d", len(doc.Paths), len(routes))
	}
}

// Every operation in /openapi.json lists what the guard may answer in
// front of it: 403 (the Host rule, on every path), 429 where a failed
// token can be refused (every operation that lists 401), and 408 and
// 503 busy where a body is read under the body rules (every routed
// operation but /healthz, /openapi.json and the session's delete).
func TestOpenAPIGuardResponses(t *testing.T) {
	ts := newServer(t, nil)
	var doc struct {
		Paths map[string]map[string]struct {
			Responses map[string]json.RawMessage `json:"responses"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(ts.do("GET", "/openapi.json", nil).body, &doc); err != nil {
		t.Fatal(err)
	}
	n := 0
	for p, ops := range doc.Paths {
		for m, op := range ops {
			want := []string{"403"}
			if p != "/healthz" && p != "/openapi.json" && !(p == "/ui/session" && m == "delete") {
				want = append(want, "408", "503")
			}
			if op.Responses["401"] != nil {
				want = append(want, "429")
			}
			for _, code := range want {
				if op.Responses[code] == nil {
					t.Errorf("%s %s does not list %s", m, p, code)
				}
			}
			n++
		}
	}
	if n < 30 {
		t.Fatalf("%d operations read", n)
	}
}

// /v1/consumers, /v1/doctor and /metrics read the store; a dead letter
// is listed, retried (204) once, then unknown (404).
func TestStoreWidePaths(t *testing.T) {
	ts := newServer(t, nil)
	ctx := context.Background()
	ts.appendN("default", "s", 2, "t")
	// Dead-letter the first event as a relay would.
	l, err := store.Inner(inside.Key{}, ts.s).AcquireLease(ctx, "relay", "test", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := ts.s.Update(ctx, func(tx *store.Tx) error {
		return store.Bookkeeping(inside.Key{}, tx).DeadLetter(ctx, l, []outboxmark.Failure{{Position: 1, Error: "refused"}})
	}); err != nil {
		t.Fatal(err)
	}
	c := ts.do("GET", "/v1/consumers", nil).json(t)
	outbox, _ := c["outbox"].(map[string]any)
	dls, _ := c["dead_letters"].([]any)
	if outbox["pending"] != 2.0 || outbox["dead_letters"] != 1.0 || len(dls) != 1 || c["projections"] == nil {
		t.Fatalf("consumers: %v", c)
	}
	if dl := dls[0].(map[string]any); dl["event_id"] != "s-t-0" || dl["error"] != "refused" || dl["position"] != "1" {
		t.Errorf("dead letter: %v", dl)
	}
	d := ts.do("GET", "/v1/doctor", nil).json(t)
	if d["healthy"] != false || !strings.Contains(string(mustJSON(t, d["findings"])), "dead") {
		t.Errorf("doctor with a dead letter: %v", d)
	}
	m := ts.do("GET", "/metrics", nil)
	if m.status != 200 || !strings.Contains(string(m.body), "eventlite_log_head_position 2") || !strings.Contains(string(m.body), "eventlite_outbox_dead_letters 1") ||
		!strings.Contains(string(m.body), "go_goroutines") {
		t.Errorf("metrics: %d %.500s", m.status, m.body)
	}
	path := "/v1/tenants/default/dead-letters/s-t-0/retry"
	if r := ts.do("POST", path, nil); r.status != 204 {
		t.Fatalf("retry: %d %s", r.status, r.body)
	}
	ts.do("POST", path, nil).wantProblem(t, 404, "dead-letter-not-found")
	ts.do("POST", "/v1/tenants/other/dead-letters/s-t-1/retry", nil).wantProblem(t, 404, "dead-letter-not-found")
	if d := ts.do("GET", "/v1/doctor", nil).json(t); d["healthy"] != true {
		t.Errorf("doctor after the retry: %v", d)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// CORS is off by default; an allowed origin gets the allowed and exposed
// headers, and a preflight is answered.
func TestCORS(t *testing.T) {
	off := newServer(t, nil)
	if r := off.do("GET", "/v1/tenants/default/events", nil, "Origin", "http://app.test"); r.header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("CORS on by default: %v", r.header)
	}
	ts := newServer(t, &serve.Options{CORSOrigins: []string{"http://app.test"}})
	r := ts.do("OPTIONS", streamEvents("default", "s"), nil, "Origin", "http://app.test",
		"Access-Control-Request-Method", "POST", "Access-Control-Request-Headers", "if-match, ce-type")
	if r.status != 204 || r.header.Get("Access-Control-Allow-Origin") != "http://app.test" ||
		!strings.Contains(r.header.Get("Access-Control-Allow-Headers"), "Idempotency-Key") ||
		!strings.Contains(r.header.Get("Access-Control-Allow-Headers"), "ce-type") {
		t.Errorf("preflight: %d %v", r.status, r.header)
	}
	r = ts.do("GET", "/v1/tenants/default/events", nil, "Origin", "http://app.test")
	if r.header.Get("Access-Control-Allow-Origin") != "http://app.test" || !strings.Contains(r.header.Get("Access-Control-Expose-Headers"), "Idempotent-Replayed") {
		t.Errorf("simple request: %v", r.header)
	}
	if r := ts.do("GET", "/v1/tenants/default/events", nil, "Origin", "http://evil.test"); r.header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("another origin allowed: %v", r.header)
	}
}
