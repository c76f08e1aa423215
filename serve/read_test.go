package serve_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// appendN appends n events t-0.. to stream over HTTP.
func (ts *testServer) appendN(tenant, stream string, n int, typ string) {
	ts.t.Helper()
	var evs [][]byte
	for i := 0; i < n; i++ {
		evs = append(evs, structured(fmt.Sprintf("%s-%s-%d", stream, typ, i), typ, fmt.Sprint(i)))
	}
	r := ts.do("POST", streamEvents(tenant, stream), batch(evs...), "Content-Type", ctBatch)
	if r.status != 201 {
		ts.t.Fatalf("append: %d %s", r.status, r.body)
	}
}

// parseBatch reads a batch answer into the events' JSON objects.
func parseBatch(t testing.TB, r response) []map[string]any {
	t.Helper()
	if r.status != 200 || r.header.Get("Content-Type") != ctBatch {
		t.Fatalf("status %d, Content-Type %q: %s", r.status, r.header.Get("Content-Type"), r.body)
	}
	var out []map[string]any
	if err := json.Unmarshal(r.body, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func field(evs []map[string]any, name string) []any {
	var out []any
	for _, e := range evs {
		out = append(out, e[name])
	}
	return out
}

// Stream reads: from (inclusive), limit, direction, the forms, and Link
// next only when events existed beyond the page.
func TestReadStream(t *testing.T) {
	ts := newServer(t, nil)
	ts.appendN("default", "s", 5, "t")
	path := streamEvents("default", "s")
	tests := []struct {
		query    string
		versions []any
		next     string
	}{
		{"", []any{1.0, 2.0, 3.0, 4.0, 5.0}, ""},
		{"?limit=2", []any{1.0, 2.0}, path + "?from=3&limit=2"},
		{"?from=3&limit=2", []any{3.0, 4.0}, path + "?from=5&limit=2"},
		{"?from=4&limit=2", []any{4.0, 5.0}, ""},
		{"?direction=backward&limit=2", []any{5.0, 4.0}, path + "?direction=backward&from=3&limit=2"},
		{"?direction=backward&from=2", []any{2.0, 1.0}, ""},
		{"?from=9", nil, ""},
	}
	for _, tt := range tests {
		r := ts.do("GET", path+tt.query, nil)
		evs := parseBatch(t, r)
		if diff := cmp.Diff(tt.versions, field(evs, "streamversion")); diff != "" {
			t.Errorf("%s versions (-want +got):\n%s", tt.query, diff)
		}
		wantLink := ""
		if tt.next != "" {
			wantLink = "<" + tt.next + `>; rel="next"`
		}
		if got := r.header.Get("Link"); got != wantLink {
			t.Errorf("%s: Link %q, want %q", tt.query, got, wantLink)
		}
		if r.header.Get("ETag") != `"5"` {
			t.Errorf("%s: ETag %q", tt.query, r.header.Get("ETag"))
		}
	}
	// Positions are strings, versions numbers, in every form.
	evs := parseBatch(t, ts.do("GET", path+"?limit=1", nil))
	if evs[0]["position"] != "1" || evs[0]["subject"] != "s" || evs[0]["tenant"] != "default" {
		t.Errorf("event: %v", evs[0])
	}
	r := ts.do("GET", path+"?limit=2", nil, "Accept", "application/x-ndjson")
	lines := strings.Split(strings.TrimSuffix(string(r.body), "\n"), "\n")
	if r.header.Get("Content-Type") != "application/x-ndjson" || len(lines) != 2 || !strings.Contains(lines[1], `"streamversion":2`) {
		t.Errorf("ndjson: %v %q", r.header, r.body)
	}
	// Any other Accept is a batch: never 406.
	if r := ts.do("GET", path, nil, "Accept", "text/html"); r.status != 200 || r.header.Get("Content-Type") != ctBatch {
		t.Errorf("Accept text/html: %d %v", r.status, r.header)
	}
	for _, q := range []string{"?limit=1001", "?limit=0", "?limit=x", "?from=-1", "?direction=up", "?follow=maybe"} {
		ts.do("GET", path+q, nil).wantProblem(t, 400, "invalid-parameter")
	}
	ts.do("GET", streamEvents("default", "nope"), nil).wantProblem(t, 404, "stream-not-found")
	ts.do("GET", "/v1/tenants/default/streams/nope", nil).wantProblem(t, 404, "stream-not-found")
	if r := ts.do("HEAD", "/v1/tenants/default/streams/s", nil); r.status != 200 || r.header.Get("ETag") != `"5"` || len(r.body) != 0 {
		t.Errorf("HEAD: %d %v", r.status, r.header)
	}
}

// One event by version; stream info.
func TestReadEventAndInfo(t *testing.T) {
	ts := newServer(t, nil)
	ts.appendN("default", "a", 1, "t")
	ts.appendN("default", "s", 3, "t")
	r := ts.do("GET", streamEvents("default", "s")+"/2", nil)
	if r.status != 200 || r.header.Get("Content-Type") != ctStructured {
		t.Fatalf("%d %v %s", r.status, r.header, r.body)
	}
	e := r.json(t)
	if e["id"] != "s-t-1" || e["streamversion"] != 2.0 || e["position"] != "3" {
		t.Errorf("event 2: %v", e)
	}
	for _, v := range []string{"4", "0", "x"} {
		ts.do("GET", streamEvents("default", "s")+"/"+v, nil).wantProblem(t, 404, "event-not-found")
	}
	ts.do("GET", streamEvents("default", "none")+"/1", nil).wantProblem(t, 404, "event-not-found")
	info := ts.do("GET", "/v1/tenants/default/streams/s", nil).json(t)
	delete(info, "updated")
	want := map[string]any{"tenant": "default", "stream": "s", "version": 3.0, "first_position": "2", "last_position": "4", "events": 3.0}
	if diff := cmp.Diff(want, info); diff != "" {
		t.Errorf("info (-want +got):\n%s", diff)
	}
}

// The tenant's log: position order, from, limit, type, Link next; never
// 404; other tenants' events never show.
func TestReadLog(t *testing.T) {
	ts := newServer(t, nil)
	ts.appendN("default", "a", 2, "x")
	ts.appendN("other", "a", 2, "x")
	ts.appendN("default", "b", 2, "y")
	ts.appendN("default", "a", 1, "y")
	path := "/v1/tenants/default/events"
	evs := parseBatch(t, ts.do("GET", path, nil))
	if diff := cmp.Diff([]any{"1", "2", "5", "6", "7"}, field(evs, "position")); diff != "" {
		t.Errorf("positions (-want +got):\n%s", diff)
	}
	r := ts.do("GET", path+"?type=y&limit=2", nil)
	evs = parseBatch(t, r)
	if diff := cmp.Diff([]any{"5", "6"}, field(evs, "position")); diff != "" {
		t.Errorf("type=y (-want +got):\n%s", diff)
	}
	if got := r.header.Get("Link"); got != "<"+path+`?from=7&limit=2&type=y>; rel="next"` {
		t.Errorf("Link %q", got)
	}
	evs = parseBatch(t, ts.do("GET", path+"?from=7&limit=2&type=y", nil))
	if diff := cmp.Diff([]any{"7"}, field(evs, "position")); diff != "" {
		t.Errorf("next page (-want +got):\n%s", diff)
	}
	if evs := parseBatch(t, ts.do("GET", "/v1/tenants/empty/events", nil)); len(evs) != 0 {
		t.Errorf("empty tenant: %v", evs)
	}
	// wait=S on an empty answer waits and answers an empty batch.
	if evs := parseBatch(t, ts.do("GET", path+"?from=8&wait=1", nil)); len(evs) != 0 {
		t.Errorf("wait: %v", evs)
	}
	ts.do("GET", path+"?wait=31", nil).wantProblem(t, 400, "invalid-parameter")
}

// Streams listing: prefix, after, limit, Link paging through all.
func TestListStreams(t *testing.T) {
	ts := newServer(t, nil)
	for _, s := range []string{"order-2", "order-1", "user-1", "order-3", "order"} {
		ts.appendN("default", s, 1, "t")
	}
	next := "/v1/tenants/default/streams?prefix=order-&limit=2"
	var got []string
	pages := 0
	for next != "" {
		r := ts.do("GET", next, nil)
		var body struct {
			Streams []map[string]any `json:"streams"`
		}
		if err := json.Unmarshal(r.body, &body); err != nil || r.status != 200 {
			t.Fatalf("%d %s", r.status, r.body)
		}
		for _, s := range body.Streams {
			got = append(got, s["stream"].(string))
		}
		pages++
		next = ""
		if l := r.header.Get("Link"); l != "" {
			next = strings.TrimSuffix(strings.TrimPrefix(l, "<"), `>; rel="next"`)
		}
	}
	if diff := cmp.Diff([]string{"order-1", "order-2", "order-3"}, got); diff != "" || pages != 2 {
		t.Errorf("%d pages (-want +got):\n%s", pages, diff)
	}
	r := ts.do("GET", "/v1/tenants/default/streams?after=order-3", nil)
	if !bytes.Contains(r.body, []byte(`"user-1"`)) || bytes.Contains(r.body, []byte(`"order`)) || r.header.Get("Link") != "" {
		t.Errorf("after: %s %v", r.body, r.header)
	}
	if r := ts.do("GET", "/v1/tenants/none/streams", nil); r.status != 200 || string(r.body) != `{"streams":[]}`+"\n" {
		t.Errorf("no streams: %d %s", r.status, r.body)
	}
	if r := ts.do("POST", "/v1/tenants/default/streams", nil); r.status != http.StatusMethodNotAllowed || r.header.Get("Allow") == "" {
		t.Errorf("POST streams: %d %v", r.status, r.header)
	}
}
