package serve_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2"
	"github.com/cloudevents/sdk-go/v2/binding"
	cehttp "github.com/cloudevents/sdk-go/v2/protocol/http"
	"github.com/google/go-cmp/cmp"

	"github.com/eventlite/eventlite/serve"
)

// sdk-go's HTTP client is a client with no eventlite code: binary mode
// (its default), structured mode and a batch are stored, and what the
// server answers parses back with sdk-go and validates.
func TestSDKGoClient(t *testing.T) {
	ts := newServer(t, nil)
	c, err := cloudevents.NewClientHTTP()
	if err != nil {
		t.Fatal(err)
	}
	target := ts.url + streamEvents("default", "order-1")
	mk := func(id string, data any) cloudevents.Event {
		e := cloudevents.NewEvent()
		e.SetID(id)
		e.SetSource("/sdk")
		e.SetType("order.placed")
		e.SetTime(time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC))
		if err := e.SetData(cloudevents.ApplicationJSON, data); err != nil {
			t.Fatal(err)
		}
		return e
	}
	send := func(ctx context.Context, e cloudevents.Event) int {
		res := c.Send(cloudevents.ContextWithTarget(ctx, target), e)
		var hr *cehttp.Result
		if !errors.As(res, &hr) {
			t.Fatalf("send %s: %v", e.ID(), res)
		}
		return hr.StatusCode
	}
	if got := send(context.Background(), mk("bin-1", map[string]int{"n": 1})); got != http.StatusCreated {
		t.Fatalf("binary: status %d", got)
	}
	if got := send(binding.WithForceStructured(context.Background()), mk("str-1", map[string]int{"n": 2})); got != http.StatusCreated {
		t.Fatalf("structured: status %d", got)
	}
	req, err := cloudevents.NewHTTPRequestFromEvents(context.Background(), target, []cloudevents.Event{mk("bat-1", 3), mk("bat-2", "four")})
	if err != nil {
		t.Fatal(err)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusCreated {
		t.Fatalf("batch: status %d", res.StatusCode)
	}
	if got := res.Header.Get("ETag"); got != `"4"` {
		t.Errorf("batch ETag %q", got)
	}

	// Read back: the batch, parsed by sdk-go.
	res, err = http.Get(target)
	if err != nil {
		t.Fatal(err)
	}
	evs, err := cloudevents.NewEventsFromHTTPResponse(res)
	res.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, e := range evs {
		if err := e.Validate(); err != nil {
			t.Errorf("event %s: %v", e.ID(), err)
		}
		if e.Subject() != "order-1" || e.Extensions()["tenant"] != "default" {
			t.Errorf("event %s: subject %q, extensions %v", e.ID(), e.Subject(), e.Extensions())
		}
		if !e.Time().Equal(time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)) {
			t.Errorf("event %s: time %v", e.ID(), e.Time())
		}
		ids = append(ids, e.ID())
	}
	if diff := cmp.Diff([]string{"bin-1", "str-1", "bat-1", "bat-2"}, ids); diff != "" {
		t.Errorf("ids (-want +got):\n%s", diff)
	}
	var data map[string]int
	if err := evs[0].DataAs(&data); err != nil || data["n"] != 1 {
		t.Errorf("binary event data %s: %v", evs[0].Data(), err)
	}
	// One event, parsed by sdk-go.
	res, err = http.Get(target + "/2")
	if err != nil {
		t.Fatal(err)
	}
	one, err := cloudevents.NewEventFromHTTPResponse(res)
	res.Body.Close()
	if err != nil || one.ID() != "str-1" || one.Validate() != nil {
		t.Fatalf("event 2: %v, %v", one, err)
	}
	if got := res.Header.Get("Content-Type"); got != ctStructured {
		t.Errorf("event Content-Type %q", got)
	}
}

// A 201 carries the version as ETag, the first new event's Location and
// the CLI's append --json object; an empty batch is 200 with the version.
func TestAppendAnswer(t *testing.T) {
	ts := newServer(t, nil)
	r := ts.do("POST", streamEvents("default", "s"), batch(structured("a", "t", "1"), structured("b", "t", "2")), "Content-Type", ctBatch)
	if r.status != http.StatusCreated {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	want := map[string]any{"tenant": "default", "stream": "s", "version": float64(2), "first_position": "1", "last_position": "2"}
	if diff := cmp.Diff(want, r.json(t)); diff != "" {
		t.Errorf("body (-want +got):\n%s", diff)
	}
	if r.header.Get("ETag") != `"2"` || r.header.Get("Location") != "/v1/tenants/default/streams/s/events/1" {
		t.Errorf("headers: %v", r.header)
	}
	if r.header.Get("Idempotent-Replayed") != "" {
		t.Error("a new append says Idempotent-Replayed")
	}
	loc := ts.do("GET", r.header.Get("Location"), nil)
	if loc.status != 200 || !strings.Contains(string(loc.body), `"id":"a"`) {
		t.Errorf("Location: %d %s", loc.status, loc.body)
	}
	r = ts.do("POST", streamEvents("default", "s"), []byte("[]"), "Content-Type", ctBatch)
	if r.status != http.StatusOK {
		t.Fatalf("empty batch: status %d: %s", r.status, r.body)
	}
	if diff := cmp.Diff(map[string]any{"tenant": "default", "stream": "s", "version": float64(2)}, r.json(t)); diff != "" {
		t.Errorf("empty batch body (-want +got):\n%s", diff)
	}
	if ts.head() != 2 {
		t.Errorf("head %d", ts.head())
	}
}

// An event candidate (application/json and ce-type, no ce-specversion)
// gets an id, a time, the spec version and the request path as source;
// other content types are 415, storing nothing.
func TestEventCandidate(t *testing.T) {
	ts := newServer(t, nil)
	path := streamEvents("default", "order-1")
	r := ts.do("POST", path, []byte(`{"total": 42}`), "Content-Type", "application/json", "ce-type", "order.placed")
	if r.status != http.StatusCreated {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	evs := ts.events("default", "order-1")
	if len(evs) != 1 {
		t.Fatalf("%d events", len(evs))
	}
	e := evs[0]
	if len(e.ID) != 26 || e.Source != path || e.Type != "order.placed" || !e.HasTime() || string(e.Data) != `{"total":42}` {
		t.Errorf("candidate stored as %+v", e)
	}
	for _, tt := range []struct {
		name   string
		header []string
		status int
		prob   string
	}{
		{"form encoding (curl's default)", []string{"Content-Type", "application/x-www-form-urlencoded", "ce-type", "t"}, 415, "unsupported-media-type"},
		{"text with ce-type", []string{"Content-Type", "text/plain", "ce-type", "t"}, 415, "unsupported-media-type"},
		{"json without ce-type", []string{"Content-Type", "application/json"}, 415, "unsupported-media-type"},
		{"no content type", nil, 415, "unsupported-media-type"},
		{"binary mode without ce-id", []string{"Content-Type", "application/json", "ce-specversion", "1.0", "ce-type", "t", "ce-source", "/x"}, 400, "invalid-event"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := ts.do("POST", path, []byte(`{"a":1}`), tt.header...)
			p := r.wantProblem(t, tt.status, tt.prob)
			if tt.status == 415 && p["field"] != "Content-Type" {
				t.Errorf("415 names %v", p["field"])
			}
		})
	}
	if ts.head() != 1 {
		t.Errorf("refused requests stored events: head %d", ts.head())
	}
}

// Binary mode: ce-* header values are percent-decoded.
func TestBinaryPercentDecoding(t *testing.T) {
	ts := newServer(t, nil)
	r := ts.do("POST", streamEvents("default", "s"), []byte("hi"),
		"ce-specversion", "1.0", "ce-id", "id%20one", "ce-source", "/x", "ce-type", "caf%C3%A9", "ce-myext", "a%25b", "Content-Type", "text/plain")
	if r.status != http.StatusCreated {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	e := ts.events("default", "s")[0]
	if e.ID != "id one" || e.Type != "café" || e.Extensions["myext"] != "a%b" || string(e.Data) != "hi" || e.DataContentType != "text/plain" {
		t.Errorf("stored %+v", e)
	}
}

// POST .../events appends each event to its subject's stream, in one
// transaction, answering one result per stream in first-appearance order.
func TestAppendMany(t *testing.T) {
	ts := newServer(t, nil)
	ev := func(id, subject string) []byte {
		return []byte(`{"specversion":"1.0","id":"` + id + `","source":"/t","type":"t","subject":"` + subject + `"}`)
	}
	r := ts.do("POST", "/v1/tenants/default/events", batch(ev("1", "b"), ev("2", "a"), ev("3", "b")), "Content-Type", ctBatch)
	if r.status != http.StatusCreated {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	want := `{"results":[{"tenant":"default","stream":"b","version":2,"first_position":"1","last_position":"2"},{"tenant":"default","stream":"a","version":1,"first_position":"3","last_position":"3"}]}` + "\n"
	if diff := cmp.Diff(want, string(r.body)); diff != "" {
		t.Errorf("body (-want +got):\n%s", diff)
	}
	// One transaction: a reused id in the second stream stores nothing.
	r = ts.do("POST", "/v1/tenants/default/events", batch(ev("4", "c"), ev("1", "d")), "Content-Type", ctBatch)
	p := r.wantProblem(t, 409, "duplicate-event-id")
	if p["index"] != float64(1) {
		t.Errorf("index %v", p["index"])
	}
	if ts.head() != 3 || ts.events("default", "c") != nil {
		t.Errorf("a refused transaction stored events: head %d", ts.head())
	}
	r = ts.do("POST", "/v1/tenants/default/events", batch(ev("5", "c"), []byte(`{"specversion":"1.0","id":"6","source":"/t","type":"t"}`)), "Content-Type", ctBatch)
	if p := r.wantProblem(t, 400, "invalid-event"); p["field"] != "subject" || p["index"] != float64(1) {
		t.Errorf("no subject: %s", r.body)
	}
	r = ts.do("POST", "/v1/tenants/default/events", ev("7", "c"), "Content-Type", ctStructured, "If-Match", `"1"`)
	r.wantProblem(t, 400, "invalid-precondition")
}

// Preconditions: If-None-Match: * (no stream), If-Match: * (exists),
// If-Match: "N" (at version N); a version that is not the stream's 412,
// malformed ones 400 (TestIfMatchOneAnswer has them all).
func TestPreconditions(t *testing.T) {
	ts := newServer(t, nil)
	path := streamEvents("default", "s")
	n := 0
	post := func(header ...string) response {
		n++
		return ts.do("POST", path, structured(fmt.Sprintf("e%d", n), "t", ""), append([]string{"Content-Type", ctStructured}, header...)...)
	}
	// Absent stream.
	r := post("If-Match", "*")
	p := r.wantProblem(t, 412, "version-conflict")
	if p["expected"] != "exists" || p["actual"] != float64(0) || r.header.Get("ETag") != "" {
		t.Errorf("If-Match * on no stream: %s %v", r.body, r.header)
	}
	r = post("If-Match", `"1"`)
	if p := r.wantProblem(t, 412, "version-conflict"); p["expected"] != float64(1) || p["actual"] != float64(0) {
		t.Errorf("If-Match \"1\" on no stream: %s", r.body)
	}
	if r := post("If-None-Match", "*"); r.status != 201 {
		t.Fatalf("If-None-Match * on no stream: %d %s", r.status, r.body)
	}
	r = post("If-None-Match", "*")
	if p := r.wantProblem(t, 412, "version-conflict"); p["expected"] != "no-stream" || p["actual"] != float64(1) || r.header.Get("ETag") != `"1"` {
		t.Errorf("If-None-Match * on a stream: %s", r.body)
	}
	if r := post("If-Match", "*"); r.status != 201 {
		t.Fatalf("If-Match *: %d %s", r.status, r.body)
	}
	if r := post("If-Match", `"2"`); r.status != 201 || r.header.Get("ETag") != `"3"` {
		t.Fatalf("If-Match \"2\": %d %s", r.status, r.body)
	}
	for _, tag := range []string{`"2"`, `"4"`, `"2147483647"`} {
		r := post("If-Match", tag)
		p := r.wantProblem(t, 412, "version-conflict")
		if p["actual"] != float64(3) || r.header.Get("ETag") != `"3"` {
			t.Errorf("If-Match %s: %s", tag, r.body)
		}
	}
	for _, h := range [][]string{
		{"If-Match", "3"},
		{"If-Match", `"0"`},
		{"If-Match", `"3", "4"`},
		{"If-Match", `"3`},
		{"If-Match", `"3"`, "If-Match", `"4"`},
		{"If-Match", `"3"`, "If-None-Match", "*"},
		{"If-None-Match", `"3"`},
		{"If-None-Match", "W/*"},
	} {
		r := post(h...)
		r.wantProblem(t, 400, "invalid-precondition")
	}
	if ts.head() != 3 {
		t.Errorf("head %d, want 3: a failed precondition stored something", ts.head())
	}
	// GET: If-None-Match with the current ETag is 304, on the stream and
	// on its events, with the ETag and no body.
	for _, p := range []string{"/v1/tenants/default/streams/s", path} {
		r := ts.do("GET", p, nil, "If-None-Match", `"3"`)
		if r.status != http.StatusNotModified || r.header.Get("ETag") != `"3"` || len(r.body) != 0 {
			t.Errorf("GET %s If-None-Match \"3\": %d %v %q", p, r.status, r.header, r.body)
		}
		if r := ts.do("GET", p, nil, "If-None-Match", `"2"`); r.status != 200 || r.header.Get("ETag") != `"3"` {
			t.Errorf("GET %s If-None-Match \"2\": %d", p, r.status)
		}
	}
}

// Re-sending the stream's newest events is 201 with the first answer and
// Idempotent-Replayed: true, whatever the preconditions say; any other
// reuse of an id is 409 duplicate-event-id with the index.
func TestEventIDReplay(t *testing.T) {
	ts := newServer(t, nil)
	path := streamEvents("default", "s")
	body := batch(structured("a", "t", "1"), structured("b", "t", "2"))
	first := ts.do("POST", path, body, "Content-Type", ctBatch, "If-None-Match", "*")
	if first.status != 201 {
		t.Fatalf("first: %d %s", first.status, first.body)
	}
	for _, h := range [][]string{{"If-None-Match", "*"}, {"If-Match", `"7"`}, {"If-Match", `"2147483647"`}, nil} {
		r := ts.do("POST", path, body, append([]string{"Content-Type", ctBatch}, h...)...)
		if r.status != 201 || string(r.body) != string(first.body) || r.header.Get("Idempotent-Replayed") != "true" || r.header.Get("ETag") != `"2"` {
			t.Errorf("retry with %q: %d %v %s", h, r.status, r.header, r.body)
		}
	}
	r := ts.do("POST", path, batch(structured("c", "t", "3"), structured("a", "t", "1"), structured("e", "t", "")), "Content-Type", ctBatch)
	if p := r.wantProblem(t, 409, "duplicate-event-id"); p["index"] == nil {
		t.Errorf("reused id: %s", r.body)
	}
	r = ts.do("POST", path, structured("b", "t", "99"), "Content-Type", ctStructured)
	if p := r.wantProblem(t, 409, "duplicate-event-id"); p["index"] != float64(0) {
		t.Errorf("same id, other data: %s", r.body)
	}
	r = ts.do("POST", path, batch(structured("d", "t", ""), structured("d", "t", "")), "Content-Type", ctBatch)
	if p := r.wantProblem(t, 409, "duplicate-event-id"); p["index"] != float64(1) {
		t.Errorf("one id twice: %s", r.body)
	}
	if ts.head() != 2 {
		t.Errorf("head %d, want 2", ts.head())
	}
}

// Bad input: each problem by name and status, nothing stored.
func TestAppendProblems(t *testing.T) {
	ts := newServer(t, nil)
	big := `"` + strings.Repeat("x", 600<<10) + `"`
	tests := []struct {
		name   string
		path   string
		body   []byte
		header []string
		status int
		prob   string
		check  func(t *testing.T, p map[string]any)
	}{
		{"bad JSON", streamEvents("default", "s"), []byte(`{"specversion":`), []string{"Content-Type", ctStructured}, 400, "invalid-event", nil},
		{"reserved type", streamEvents("default", "s"), structured("a", "eventlite.x", ""), []string{"Content-Type", ctStructured}, 400, "invalid-event", func(t *testing.T, p map[string]any) {
			if p["field"] != "type" {
				t.Errorf("field %v", p["field"])
			}
		}},
		{"subject mismatch", streamEvents("default", "s"), []byte(`{"specversion":"1.0","id":"a","source":"/t","type":"t","subject":"other"}`), []string{"Content-Type", ctStructured}, 400, "subject-mismatch", func(t *testing.T, p map[string]any) {
			if p["index"] != float64(0) || p["stream"] != "s" {
				t.Errorf("%v", p)
			}
		}},
		{"tenant mismatch", streamEvents("default", "s"), []byte(`{"specversion":"1.0","id":"a","source":"/t","type":"t","tenant":"other"}`), []string{"Content-Type", ctStructured}, 400, "invalid-event", nil},
		{"invalid tenant", "/v1/tenants/" + "%20x/streams/s/events", structured("a", "t", ""), []string{"Content-Type", ctStructured}, 400, "invalid-tenant", nil},
		{"stream id too long", streamEvents("default", strings.Repeat("s", 256)), structured("a", "t", ""), []string{"Content-Type", ctStructured}, 400, "invalid-stream-id", nil},
		{"data too large", streamEvents("default", "s"), structured("a", "t", big), []string{"Content-Type", ctStructured}, 413, "too-large", func(t *testing.T, p map[string]any) {
			if p["limit"] != float64(512<<10) || p["field"] != "data" {
				t.Errorf("%v", p)
			}
		}},
		{"body too large", streamEvents("default", "s"), make([]byte, serve.MaxBodyBytes+1), []string{"Content-Type", ctBatch}, 413, "too-large", func(t *testing.T, p map[string]any) {
			if p["limit"] != float64(serve.MaxBodyBytes) {
				t.Errorf("%v", p)
			}
		}},
		{"bad idempotency key", streamEvents("default", "s"), structured("a", "t", ""), []string{"Content-Type", ctStructured, "Idempotency-Key", "has space"}, 400, "invalid-idempotency-key", nil},
		{"long idempotency key", streamEvents("default", "s"), structured("a", "t", ""), []string{"Content-Type", ctStructured, "Idempotency-Key", strings.Repeat("k", 256)}, 400, "invalid-idempotency-key", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := ts.do("POST", tt.path, tt.body, tt.header...)
			p := r.wantProblem(t, tt.status, tt.prob)
			if tt.check != nil {
				tt.check(t, p)
			}
		})
	}
	if ts.head() != 0 {
		t.Errorf("bad input stored events: head %d", ts.head())
	}
	var p map[string]any
	_ = json.Unmarshal(ts.do("GET", "/v1/nothing", nil).body, &p)
	if p["status"] != float64(404) {
		t.Errorf("unknown path: %v", p)
	}
}

// TestIfMatchOneAnswer: every If-Match that is neither * nor the strong
// ETag of a version (1 to 2147483647, no leading zero) answers one way,
// 400 invalid-precondition naming If-Match, on an append, a delete and a
// truncate, and changes nothing; a version past the stream's is 412.
func TestIfMatchOneAnswer(t *testing.T) {
	ts := newServer(t, nil)
	if r := ts.do("POST", streamEvents("default", "s"), batch(structured("a", "t", ""), structured("b", "t", ""), structured("c", "t", "")), "Content-Type", ctBatch); r.status != 201 {
		t.Fatalf("setup: %d %s", r.status, r.body)
	}
	type req struct {
		method, path, body string
		header             []string
	}
	requests := map[string]req{
		"append":   {"POST", streamEvents("default", "s"), string(structured("d", "t", "")), []string{"Content-Type", ctStructured}},
		"delete":   {"DELETE", "/v1/tenants/default/streams/s", "", nil},
		"truncate": {"POST", "/v1/tenants/default/streams/s/truncate", `{"before":2}`, []string{"Content-Type", "application/json"}},
	}
	for _, v := range []string{
		`"2147483648"`, `"99999999999999999999"`, `"0"`, `"-1"`, `"03"`, `"+3"`, `"x"`, `W/"3"`,
		`3`, `"3`, `"3", "4"`, `""`, `W/`, `**`,
	} {
		for name, rq := range requests {
			r := ts.do(rq.method, rq.path, []byte(rq.body), append([]string{"If-Match", v}, rq.header...)...)
			p := r.wantProblem(t, 400, "invalid-precondition")
			if p["field"] != "If-Match" || p["reason"] == nil {
				t.Errorf("%s If-Match %s: %s", name, v, r.body)
			}
		}
	}
	if got := ts.head(); got != 3 {
		t.Errorf("head %d, want 3: a refused precondition stored something", got)
	}
	for name, rq := range requests {
		r := ts.do(rq.method, rq.path, []byte(rq.body), append([]string{"If-Match", `"4"`}, rq.header...)...)
		if p := r.wantProblem(t, 412, "version-conflict"); p["expected"] != float64(4) || p["actual"] != float64(3) {
			t.Errorf("%s If-Match \"4\" at version 3: %s", name, r.body)
		}
	}
}
