package serve_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/internal/inside"
	"github.com/eventlite/eventlite/internal/outboxmark"
	"github.com/eventlite/eventlite/serve"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/lifecycle"
	"github.com/eventlite/eventlite/store/outbox"
)

const streamPath = "/v1/tenants/default/streams/"

// Bad input to DELETE and truncate answers a problem and changes nothing.
func TestLifecycleBadInput(t *testing.T) {
	ts := newServer(t, nil)
	ts.appendN("default", "s", 3, "t")
	ct := []string{"Content-Type", "application/json"}
	for _, tc := range []struct {
		method, path, body string
		header             []string
		status             int
		name               string
	}{
		{"DELETE", streamPath + "nope", "", nil, 404, "stream-not-found"},
		{"POST", streamPath + "nope/truncate", `{"before":2}`, ct, 404, "stream-not-found"},
		{"POST", streamPath + "s/truncate", `{"before":4}`, ct, 400, "invalid-parameter"},
		{"POST", streamPath + "s/truncate", `{"before":1}`, ct, 400, "invalid-parameter"},
		{"POST", streamPath + "s/truncate", `{"before":2.5}`, ct, 400, "invalid-body"},
		{"POST", streamPath + "s/truncate", `{}`, ct, 400, "invalid-body"},
		{"POST", streamPath + "s/truncate", `{"before":2,"x":1}`, ct, 400, "invalid-body"},
		{"POST", streamPath + "s/truncate", `{"before":2}`, nil, 415, "unsupported-media-type"},
		{"POST", streamPath + "s/truncate", `{"before":2}`, append([]string{"If-Match", `"2"`}, ct...), 412, "version-conflict"},
		{"POST", streamPath + "s/truncate", `{"before":2}`, append([]string{"If-None-Match", "*"}, ct...), 400, "invalid-precondition"},
		{"DELETE", streamPath + "s?hard=yes", "", nil, 400, "invalid-parameter"},
		{"DELETE", streamPath + "s", "", []string{"If-Match", `"2"`}, 412, "version-conflict"},
		{"DELETE", streamPath + "s", "", []string{"If-None-Match", "*"}, 400, "invalid-precondition"},
		{"DELETE", streamPath + "s", "", []string{"If-Match", "3"}, 400, "invalid-precondition"},
		{"DELETE", "/v1/tenants/default/streams/s/events", "", nil, 405, "method-not-allowed"},
	} {
		var body []byte
		if tc.body != "" {
			body = []byte(tc.body)
		}
		r := ts.do(tc.method, tc.path, body, tc.header...)
		p := r.wantProblem(t, tc.status, tc.name)
		if tc.name == "invalid-parameter" && strings.Contains(tc.path, "truncate") && p["field"] != "before" {
			t.Errorf("%s %s: field %v, want before", tc.method, tc.path, p["field"])
		}
		if ts.head() != 3 || len(ts.events("default", "s")) != 3 {
			t.Fatalf("%s %s %s changed the store", tc.method, tc.path, tc.body)
		}
	}
}

func TestDeleteOverHTTP(t *testing.T) {
	ts := newServer(t, &serve.Options{Tokens: []serve.Token{{Secret: "s3cret", Tenant: "default"}}})
	auth := []string{"Authorization", "Bearer s3cret"}
	for range 2 {
		e, _ := envelope.New("t", nil)
		e.Source = "/test"
		if _, err := ts.s.Append(context.Background(), "default", "s", store.Any, e); err != nil {
			t.Fatal(err)
		}
	}
	r := ts.do("DELETE", streamPath+"s?reason=gdpr", nil, append([]string{"If-Match", `"2"`}, auth...)...)
	if r.status != 200 || r.header.Get("ETag") != `"3"` || r.header.Get("Location") != streamPath+"s/events/3" {
		t.Fatalf("delete: %d %v %s", r.status, r.header, r.body)
	}
	if m := r.json(t); m["version"] != 3.0 || m["first_position"] != "3" {
		t.Fatalf("delete body %s", r.body)
	}
	var tomb lifecycle.StreamDeleted
	var found bool
	for e, err := range ts.s.ReadAll(context.Background(), store.ReadAllOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		if e.Type == lifecycle.TypeStreamDeleted {
			found = json.Unmarshal(e.Data, &tomb) == nil
		}
	}
	if !found || tomb.Reason != "gdpr" || tomb.Hard || strings.Contains(tomb.By, "s3cret") || tomb.By == "" {
		t.Fatalf("tombstone %+v (found %v)", tomb, found)
	}
	ts.do("GET", streamPath+"s", nil, auth...).wantProblem(t, 404, "stream-not-found")
	ts.do("GET", streamPath+"s/events", nil, auth...).wantProblem(t, 404, "stream-not-found")
	ts.do("DELETE", streamPath+"s", nil, auth...).wantProblem(t, 404, "stream-not-found")
	// exists or N conflict with actual 0, without an ETag.
	post := func(id string, header ...string) response {
		return ts.do("POST", streamEvents("default", "s"), structured(id, "t", ""), append(append([]string{"Content-Type", ctStructured}, auth...), header...)...)
	}
	r = post("x1", "If-Match", "*")
	if p := r.wantProblem(t, 412, "version-conflict"); p["actual"] != 0.0 || r.header.Get("ETag") != "" {
		t.Fatalf("If-Match * after a delete: %s %v", r.body, r.header)
	}
	r = post("x2", "If-None-Match", "*")
	if r.status != 201 || r.header.Get("ETag") != `"4"` {
		t.Fatalf("If-None-Match * after a tombstone at 3: %d %v %s", r.status, r.header, r.body)
	}
	// Hard.
	r = ts.do("DELETE", streamPath+"s?hard=true", nil, auth...)
	if r.status != 200 || r.header.Get("ETag") != `"5"` {
		t.Fatalf("hard delete: %d %s", r.status, r.body)
	}
	ts.do("GET", streamPath+"s", nil, auth...).wantProblem(t, 410, "stream-deleted")
	ts.do("GET", streamPath+"s/events", nil, auth...).wantProblem(t, 410, "stream-deleted")
	ts.do("GET", streamPath+"s/events/1", nil, auth...).wantProblem(t, 410, "stream-deleted")
	post("x3").wantProblem(t, 410, "stream-deleted")
	ts.do("DELETE", streamPath+"s", nil, auth...).wantProblem(t, 410, "stream-deleted")
	ts.do("POST", streamPath+"s/truncate", []byte(`{"before":2}`), append([]string{"Content-Type", "application/json"}, auth...)...).wantProblem(t, 410, "stream-deleted")
	if ts.head() != 5 {
		t.Fatalf("head %d, want 5: the log keeps the events and tombstones", ts.head())
	}
}

func TestTruncateOverHTTP(t *testing.T) {
	ts := newServer(t, nil)
	ts.appendN("default", "s", 4, "t")
	r := ts.do("POST", streamPath+"s/truncate", []byte(`{"before":3}`), "Content-Type", "application/json", "If-Match", `"4"`)
	if r.status != 200 || r.header.Get("ETag") != `"5"` {
		t.Fatalf("truncate: %d %v %s", r.status, r.header, r.body)
	}
	evs := ts.events("default", "s")
	if len(evs) != 3 || evs[0].StreamVersion != 3 || evs[2].Type != lifecycle.TypeStreamTruncated || string(evs[2].Data) != `{"before":3}` {
		t.Fatalf("stream after truncate: %d events", len(evs))
	}
	if m := ts.do("GET", streamPath+"s", nil).json(t); m["first_position"] != "3" || m["version"] != 5.0 {
		t.Fatalf("stream after truncate: %v", m)
	}
	var got []envelopeEvent
	if err := json.Unmarshal(ts.do("GET", streamPath+"s/events", nil).body, &got); err != nil || len(got) != 3 || got[0].StreamVersion != 3 {
		t.Fatalf("read after truncate: %d events (%v)", len(got), err)
	}
	// The log keeps every event.
	if ts.head() != 5 {
		t.Fatalf("head %d, want 5", ts.head())
	}
}

func TestCORSAllowsDelete(t *testing.T) {
	ts := newServer(t, &serve.Options{CORSOrigins: []string{"http://app.test"}})
	r := ts.do("OPTIONS", streamPath+"s", nil, "Origin", "http://app.test", "Access-Control-Request-Method", "DELETE")
	if r.status != 204 || !strings.Contains(r.header.Get("Access-Control-Allow-Methods"), "DELETE") {
		t.Fatalf("preflight: %d %v", r.status, r.header)
	}
}

// A read-only token or another tenant's cannot delete or truncate.
func TestLifecycleNeedsAWriteToken(t *testing.T) {
	ts := newServer(t, &serve.Options{Tokens: []serve.Token{{Secret: "ro", Tenant: "default", ReadOnly: true}, {Secret: "other", Tenant: "acme"}}})
	e, _ := envelope.New("t", nil)
	e.Source = "/test"
	if _, err := ts.s.Append(context.Background(), "default", "s", store.Any, e, func() envelopeEvent { x := e; x.ID = "second"; return x }()); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ secret, name string }{{"ro", "read-only"}, {"other", "tenant-forbidden"}} {
		auth := []string{"Authorization", "Bearer " + tc.secret}
		ts.do("DELETE", streamPath+"s", nil, auth...).wantProblem(t, 403, tc.name)
		ts.do("POST", streamPath+"s/truncate", []byte(`{"before":2}`), append([]string{"Content-Type", "application/json"}, auth...)...).wantProblem(t, 403, tc.name)
	}
	if ts.head() != 2 || len(ts.events("default", "s")) != 2 {
		t.Fatal("a refused request changed the stream")
	}
}

// After a scavenge removed an event, appending its id again is 409, as
// before the removal (guarantee 5).
func TestRemovedEventIDIsAConflict(t *testing.T) {
	ctx := context.Background()
	ts := newServer(t, nil)
	ts.appendN("default", "s", 3, "t") // ids s-t-0 .. s-t-2
	if r := ts.do("POST", streamPath+"s/truncate", []byte(`{"before":3}`), "Content-Type", "application/json"); r.status != 200 {
		t.Fatalf("truncate: %d %s", r.status, r.body)
	}
	lease, err := store.Inner(inside.Key{}, ts.s).AcquireLease(ctx, "relay", "test", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := outbox.For(ts.s).Read(ctx, outbox.ReadOptions{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	var pub []outboxmark.Published
	for _, r := range rows {
		pub = append(pub, outboxmark.Published{Position: r.Event.Position})
	}
	if err := ts.s.Update(ctx, func(tx *store.Tx) error {
		_, err := store.Bookkeeping(inside.Key{}, tx).MarkPublished(ctx, lease, pub)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	res, err := lifecycle.For(ts.s).Scavenge(ctx, lifecycle.ScavengeOptions{})
	if err != nil || res.Removed != 2 {
		t.Fatalf("scavenge: removed %d (%v)", res.Removed, err)
	}
	for _, stream := range []string{"s", "other"} {
		r := ts.do("POST", "/v1/tenants/default/streams/"+stream+"/events", structured("s-t-0", "t", "0"), "Content-Type", "application/cloudevents+json")
		r.wantProblem(t, 409, "duplicate-event-id")
	}
}

// DELETE and truncate take an Idempotency-Key: a retry answers the first
// answer and appends nothing; the key on another request is a mismatch.
func TestLifecycleIdempotencyKey(t *testing.T) {
	ts := newServer(t, nil)
	ts.appendN("default", "s", 4, "t")
	ts.appendN("default", "d", 2, "t")
	ct := []string{"Content-Type", "application/json"}
	trunc := func(key, body string) response {
		return ts.do("POST", streamPath+"s/truncate", []byte(body), append([]string{"Idempotency-Key", key}, ct...)...)
	}
	first := trunc("k-trunc", `{"before":3}`)
	if first.status != 200 {
		t.Fatalf("truncate: %d %s", first.status, first.body)
	}
	again := trunc("k-trunc", `{"before":3}`)
	if again.status != 200 || string(again.body) != string(first.body) || again.header.Get("Idempotent-Replayed") != "true" || again.header.Get("ETag") != first.header.Get("ETag") {
		t.Fatalf("retried truncate: %d %s %v, first %s", again.status, again.body, again.header, first.body)
	}
	trunc("k-trunc", `{"before":4}`).wantProblem(t, 422, "idempotency-key-mismatch")
	if v, _ := ts.s.StreamVersion(context.Background(), "default", "s"); v != 5 {
		t.Fatalf("version after a retried truncate: %d, want 5 (one truncate event)", v)
	}

	del := ts.do("DELETE", streamPath+"d?reason=x", nil, "Idempotency-Key", "k-del")
	if del.status != 200 {
		t.Fatalf("delete: %d %s", del.status, del.body)
	}
	// Without the key a second delete is 404; with it, the first answer.
	if r := ts.do("DELETE", streamPath+"d?reason=x", nil, "Idempotency-Key", "k-del"); r.status != 200 || string(r.body) != string(del.body) {
		t.Fatalf("retried delete: %d %s", r.status, r.body)
	}
	ts.do("DELETE", streamPath+"d?reason=y", nil, "Idempotency-Key", "k-del").wantProblem(t, 422, "idempotency-key-mismatch")
	ts.do("DELETE", streamPath+"d", nil).wantProblem(t, 404, "stream-not-found")
	// A refused request records nothing: the key stays free.
	ts.do("DELETE", streamPath+"nope", nil, "Idempotency-Key", "k-free").wantProblem(t, 404, "stream-not-found")
	ts.appendN("default", "nope", 1, "t")
	if r := ts.do("DELETE", streamPath+"nope", nil, "Idempotency-Key", "k-free"); r.status != 200 {
		t.Fatalf("delete after a refused one with the same key: %d %s", r.status, r.body)
	}
}

// TestDeleteReasonRule: ?reason= follows the attribute rule: a control
// character (CR, LF and tab included), invalid UTF-8 or edge white space
// is 400 invalid-parameter naming reason, and nothing is deleted; the
// reason is never rewritten to U+FFFD nor kept with its line breaks.
func TestDeleteReasonRule(t *testing.T) {
	ts := newServer(t, nil)
	ts.appendN("default", "s", 2, "t")
	for _, q := range []string{"line%0Abreak", "carriage%0Dreturn", "crlf%0D%0A", "tab%09here", "bad%FFutf-8", "nul%00", "%20edge", "c1%C2%85", "a&reason=b"} {
		r := ts.do("DELETE", streamPath+"s?reason="+q, nil)
		if p := r.wantProblem(t, 400, "invalid-parameter"); p["field"] != "reason" || p["reason"] == nil {
			t.Errorf("reason=%s: %s", q, r.body)
		}
	}
	if ts.head() != 2 || len(ts.events("default", "s")) != 2 {
		t.Fatalf("a refused delete changed the store")
	}
	if r := ts.do("DELETE", streamPath+"s?reason=gdpr%3A%20ticket%2012%20(Zo%C3%AB)", nil); r.status != 200 {
		t.Fatalf("a valid reason: %d %s", r.status, r.body)
	}
	var got lifecycle.StreamDeleted
	for e, err := range ts.s.ReadAll(context.Background(), store.ReadAllOptions{Tenant: "default"}) {
		if err != nil {
			t.Fatal(err)
		}
		if e.Type == lifecycle.TypeStreamDeleted {
			if err := json.Unmarshal(e.Data, &got); err != nil {
				t.Fatal(err)
			}
		}
	}
	if got.Reason != "gdpr: ticket 12 (Zoë)" {
		t.Errorf("tombstone reason %q", got.Reason)
	}
}
