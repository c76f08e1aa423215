package serve_test

import (
	"bufio"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/eventlite/eventlite/envelope"
)

// httpTags are tags with the separator and the escape in them.
var httpTags = []string{`a,b`, `\`, `x\,y`, "course:c1", "ünï"}

func taggedJSON(id, typ string, tags ...string) []byte {
	b, _ := json.Marshal(envelope.EncodeTags(tags))
	return []byte(`{"specversion":"1.0","id":"` + id + `","source":"/test","type":"` + typ + `","eventlitetags":` + string(b) + `}`)
}

func decodeBatch(t *testing.T, b []byte) []envelope.Event {
	t.Helper()
	evs, err := envelope.DecodeBatchJSON(b, 0)
	if err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	return evs
}

func eventIDs(evs []envelope.Event) []string {
	var out []string
	for _, e := range evs {
		out = append(out, e.ID)
	}
	return out
}

// TestTagsOverHTTP: tags travel both ways byte for byte (structured,
// batch and binary mode in; JSON out), a read by tag= and type= or by a
// POST .../query body returns the matching events, and hostile tags are
// refused (400, nothing stored).
func TestTagsOverHTTP(t *testing.T) {
	ts := newServer(t, nil)
	if r := ts.do("POST", streamEvents("default", "c1"), taggedJSON("e1", "CourseDefined", httpTags...), "Content-Type", ctStructured); r.status != 201 {
		t.Fatalf("append: %d %s", r.status, r.body)
	}
	if r := ts.do("POST", streamEvents("default", "c2"), batch(taggedJSON("e2", "CourseDefined", "course:c2"),
		taggedJSON("e3", "StudentSubscribed", "course:c2", "student:s1")), "Content-Type", ctBatch); r.status != 201 {
		t.Fatalf("batch: %d %s", r.status, r.body)
	}
	if r := ts.do("POST", streamEvents("default", "c1"), nil, "ce-specversion", "1.0", "ce-id", "e4", "ce-source", "/t", "ce-type", "StudentSubscribed",
		"ce-eventlitetags", url.PathEscape(envelope.EncodeTags([]string{"course:c1", "student:s1"}))); r.status != 201 {
		t.Fatalf("binary: %d %s", r.status, r.body)
	}
	got := ts.events("default", "c1")
	if len(got) != 2 || !slices.Equal(got[0].Tags, httpTags) || !slices.Equal(got[1].Tags, []string{"course:c1", "student:s1"}) {
		t.Fatalf("stored: %+v", got)
	}
	r := ts.do("GET", streamEvents("default", "c1"), nil)
	if evs := decodeBatch(t, r.body); !slices.Equal(evs[0].Tags, httpTags) {
		t.Errorf("read back: %q", evs[0].Tags)
	}
	read := func(query string) []string {
		t.Helper()
		r := ts.do("GET", "/v1/tenants/default/events?"+query, nil)
		if r.status != 200 {
			t.Fatalf("GET %s: %d %s", query, r.status, r.body)
		}
		return eventIDs(decodeBatch(t, r.body))
	}
	if got := read("tag=" + url.QueryEscape(`x\,y`)); !slices.Equal(got, []string{"e1"}) {
		t.Errorf("tag=x\\,y: %v", got)
	}
	if got := read("tag=student%3As1&type=StudentSubscribed"); !slices.Equal(got, []string{"e3", "e4"}) {
		t.Errorf("tag and type: %v", got)
	}
	if got := read("tag=student%3As1&direction=backward&limit=1"); !slices.Equal(got, []string{"e4"}) {
		t.Errorf("backward limit 1: %v", got)
	}
	query := func(body string) response {
		return ts.do("POST", "/v1/tenants/default/query", []byte(body), "Content-Type", "application/json")
	}
	r = query(`{"items":[{"tags":["course:c2"],"types":["CourseDefined"]},{"tags":["a,b"]}]}`)
	if r.status != 200 || !slices.Equal(eventIDs(decodeBatch(t, r.body)), []string{"e1", "e2"}) {
		t.Errorf("POST query: %d %s", r.status, r.body)
	}
	query(`{"items":[{}]}`).wantProblem(t, 400, "invalid-event")
	query(`{"items":[{"tags":["x"]}],"extra":1}`).wantProblem(t, 400, "invalid-body")
	ts.do("POST", "/v1/tenants/default/query?tag=x", []byte(`{}`)).wantProblem(t, 400, "invalid-parameter")
	ts.do("GET", "/v1/tenants/default/events?tag=", nil).wantProblem(t, 400, "invalid-parameter")
	ts.do("GET", "/v1/tenants/default/events?tag=a&stream_prefix=c", nil).wantProblem(t, 400, "invalid-parameter")
	for _, bad := range []string{"", " x", "a\x01", strings.Repeat("y", envelope.MaxTagBytes+1)} {
		r := ts.do("POST", streamEvents("default", "hostile"), taggedJSON("h", "T", bad), "Content-Type", ctStructured)
		if r.status != 400 && r.status != 413 {
			t.Errorf("tag %q: %d %s", bad, r.status, r.body)
		}
	}
	if evs := ts.events("default", "hostile"); len(evs) != 0 {
		t.Errorf("hostile tags stored %d events", len(evs))
	}
}

// TestConditionOverHTTP: an append carrying Eventlite-Condition fails
// with 409 condition-failed naming the matching event's position when
// an event matching it is after its position; the JSON form takes
// several items; when If-Match fails too, the version conflict (412)
// answers.
func TestConditionOverHTTP(t *testing.T) {
	ts := newServer(t, nil)
	claim := func(stream, id, cond string, header ...string) response {
		h := append([]string{"Content-Type", ctStructured, "Eventlite-Condition", cond}, header...)
		return ts.do("POST", streamEvents("default", stream), taggedJSON(id, "UserRegistered", "username:alice"), h...)
	}
	cond := "tag=" + url.QueryEscape("username:alice")
	if r := claim("user-1", "u1", cond); r.status != 201 {
		t.Fatalf("first claim: %d %s", r.status, r.body)
	}
	p := claim("user-2", "u2", cond).wantProblem(t, 409, "condition-failed")
	if p["position"] != "1" || p["event_id"] != "u1" || p["after"] != nil && p["after"] != "0" {
		t.Errorf("problem %v", p)
	}
	if evs := ts.events("default", "user-2"); len(evs) != 0 {
		t.Errorf("a failed condition stored %d events", len(evs))
	}
	if r := claim("user-2", "u2", cond+"&after=1"); r.status != 201 {
		t.Errorf("after=1: %d %s", r.status, r.body)
	}
	js := `{"items":[{"tags":["username:bob"]},{"tags":["username:alice"],"types":["UserRegistered"]}],"after":"2"}`
	if r := claim("user-3", "u3", js); r.status != 201 {
		t.Errorf("JSON condition, nothing after 2: %d %s", r.status, r.body)
	}
	claim("user-4", "u4", js).wantProblem(t, 409, "condition-failed")
	// Both fail: the expected version answers.
	claim("user-1", "u5", cond, "If-Match", `"7"`).wantProblem(t, 412, "version-conflict")
	claim("user-5", "u6", "tag=").wantProblem(t, 400, "invalid-precondition")
	claim("user-5", "u6", "bogus=1").wantProblem(t, 400, "invalid-precondition")
	// The tenant's log: the condition holds for the request.
	r := ts.do("POST", "/v1/tenants/default/events", batch(
		[]byte(`{"specversion":"1.0","id":"m1","source":"/t","type":"T","subject":"a","eventlitetags":"k"}`),
		[]byte(`{"specversion":"1.0","id":"m2","source":"/t","type":"T","subject":"b","eventlitetags":"k"}`)),
		"Content-Type", ctBatch, "Eventlite-Condition", "tag=k")
	if r.status != 201 {
		t.Errorf("log append with its own matching events: %d %s", r.status, r.body)
	}
}

// TestQueryLive: a live read by query (SSE and JSON Lines) sends the
// matching history, then the matching new events only.
func TestQueryLive(t *testing.T) {
	ts := newServer(t, nil)
	ts.do("POST", streamEvents("default", "s"), taggedJSON("h1", "T", "k"), "Content-Type", ctStructured)
	sse := openSSE(t, ts.url+"/v1/tenants/default/events?tag=k")
	req, _ := http.NewRequest("POST", ts.url+"/v1/tenants/default/query?follow=true", strings.NewReader(`{"items":[{"tags":["k"]}]}`))
	req.Header.Set("Accept", "application/x-ndjson")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	lines := bufio.NewReader(res.Body)
	nextLine := func() envelope.Event {
		t.Helper()
		for {
			l, err := lines.ReadString('\n')
			if err != nil {
				t.Fatal(err)
			}
			if strings.TrimSpace(l) == "" {
				continue // heartbeat
			}
			e, err := envelope.DecodeJSON([]byte(l), 0)
			if err != nil {
				t.Fatal(err)
			}
			return e
		}
	}
	nextSSE := func() envelope.Event {
		t.Helper()
		for {
			f, ok := sse.next()
			if !ok {
				t.Fatal("SSE ended")
			}
			if f.event == "" && f.data != "" {
				e, err := envelope.DecodeJSON([]byte(f.data), 0)
				if err != nil {
					t.Fatal(err)
				}
				return e
			}
		}
	}
	if e := nextSSE(); e.ID != "h1" {
		t.Fatalf("SSE history: %s", e.ID)
	}
	if e := nextLine(); e.ID != "h1" {
		t.Fatalf("ndjson history: %s", e.ID)
	}
	ts.do("POST", streamEvents("default", "s"), taggedJSON("n0", "T", "other"), "Content-Type", ctStructured)
	ts.do("POST", streamEvents("default", "s"), taggedJSON("n1", "T", "k", `a,b`), "Content-Type", ctStructured)
	if e := nextSSE(); e.ID != "n1" || !slices.Equal(e.Tags, []string{"k", "a,b"}) {
		t.Errorf("SSE live: %s %q", e.ID, e.Tags)
	}
	if e := nextLine(); e.ID != "n1" {
		t.Errorf("ndjson live: %s", e.ID)
	}
}
