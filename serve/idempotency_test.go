package serve_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"sync"
	"testing"
)

// Idempotency-Key: a 2xx is recorded as operation http:<key> in the
// append's transaction and answered again with Idempotent-Replayed; the
// quoted and bare forms are one key; another request with the key is 422;
// a 4xx is evaluated again; keys never cross tenants.
func TestIdempotencyKey(t *testing.T) {
	ts := newServer(t, nil)
	ctx := context.Background()
	path := streamEvents("default", "s")
	post := func(key string, body []byte, header ...string) response {
		return ts.do("POST", path, body, append([]string{"Content-Type", "application/json", "ce-type", "t", "Idempotency-Key", key}, header...)...)
	}
	first := post("k1", []byte(`{"n":1}`))
	if first.status != 201 || first.header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("first: %d %v %s", first.status, first.header, first.body)
	}
	// A candidate: the retry keeps the first id (no second event).
	again := post(`"k1"`, []byte(`{"n":1}`))
	if again.status != 201 || string(again.body) != string(first.body) || again.header.Get("Idempotent-Replayed") != "true" ||
		again.header.Get("ETag") != first.header.Get("ETag") || again.header.Get("Location") != first.header.Get("Location") {
		t.Errorf("retry: %d %v %s", again.status, again.header, again.body)
	}
	if n := len(ts.events("default", "s")); n != 1 {
		t.Fatalf("%d events after a retry, want 1", n)
	}
	op, ok, err := ts.s.Aggregates().Operation(ctx, "default", "http:k1")
	if err != nil || !ok || op.Type != "http.append" {
		t.Errorf("ledger: %+v %v %v", op, ok, err)
	}
	post("k1", []byte(`{"n":2}`)).wantProblem(t, 422, "idempotency-key-mismatch")
	post("k1", []byte(`{"n":1}`), "If-Match", `"1"`).wantProblem(t, 422, "idempotency-key-mismatch")

	// A 4xx is not recorded: the same request is evaluated again.
	post("k2", []byte(`{"n":3}`), "If-Match", `"2"`).wantProblem(t, 412, "version-conflict")
	if _, ok, _ := ts.s.Aggregates().Operation(ctx, "default", "http:k2"); ok {
		t.Error("a 412 was recorded")
	}
	post("k3", []byte(`{"n":4}`))
	if r := post("k2", []byte(`{"n":3}`), "If-Match", `"2"`); r.status != 201 {
		t.Errorf("k2 after the stream reached version 2: %d %s", r.status, r.body)
	}
	// Another tenant: the same key is another operation.
	r := ts.do("POST", streamEvents("other", "s"), []byte(`{"n":2}`), "Content-Type", "application/json", "ce-type", "t", "Idempotency-Key", "k1")
	if r.status != 201 || r.header.Get("Idempotent-Replayed") != "" {
		t.Errorf("other tenant: %d %v", r.status, r.header)
	}
}

// Ten identical requests at once with one key: one event; every answer
// is 201, or 409 idempotency-key-in-flight with Retry-After.
func TestIdempotencyKeyConcurrent(t *testing.T) {
	ts := newServer(t, nil)
	path := streamEvents("default", "s")
	var wg sync.WaitGroup
	start := make(chan struct{})
	res := make([]response, 10)
	for i := range res {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			res[i] = doReq(t, "POST", ts.url+path, []byte(`{"n":1}`), "Content-Type", "application/json", "ce-type", "t", "Idempotency-Key", "same")
		}()
	}
	close(start)
	wg.Wait()
	created := 0
	var body string
	for _, r := range res {
		switch r.status {
		case 201:
			created++
			if body != "" && string(r.body) != body {
				t.Errorf("answers differ: %s vs %s", r.body, body)
			}
			body = string(r.body)
		case 409:
			r.wantProblem(t, 409, "idempotency-key-in-flight")
			if r.header.Get("Retry-After") != "1" {
				t.Errorf("409 without Retry-After: %v", r.header)
			}
		default:
			t.Errorf("status %d: %s", r.status, r.body)
		}
	}
	if created == 0 {
		t.Error("no 201")
	}
	if n := len(ts.events("default", "s")); n != 1 {
		t.Errorf("%d events, want 1", n)
	}
}

// A key on POST .../events records the whole multi-stream answer; a key
// too long for the ledger with its prefix is recorded by its hash.
func TestIdempotencyKeyManyAndLong(t *testing.T) {
	ts := newServer(t, nil)
	ctx := context.Background()
	body := batch(
		[]byte(`{"specversion":"1.0","id":"m1","source":"/t","type":"t","subject":"a"}`),
		[]byte(`{"specversion":"1.0","id":"m2","source":"/t","type":"t","subject":"b"}`))
	first := ts.do("POST", "/v1/tenants/default/events", body, "Content-Type", ctBatch, "Idempotency-Key", "many")
	again := ts.do("POST", "/v1/tenants/default/events", body, "Content-Type", ctBatch, "Idempotency-Key", "many")
	if first.status != 201 || again.status != 201 || string(first.body) != string(again.body) || again.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("first %d %s; again %d %v %s", first.status, first.body, again.status, again.header, again.body)
	}
	long := strings.Repeat("k", 255)
	r := ts.do("POST", streamEvents("default", "c"), structured("l1", "t", ""), "Content-Type", ctStructured, "Idempotency-Key", long)
	if r.status != 201 {
		t.Fatalf("long key: %d %s", r.status, r.body)
	}
	sum := sha256.Sum256([]byte(long))
	if _, ok, err := ts.s.Aggregates().Operation(ctx, "default", "http.sha256:"+hex.EncodeToString(sum[:])); !ok || err != nil {
		t.Errorf("long key not recorded by its hash: %v", err)
	}
	if r := ts.do("POST", streamEvents("default", "c"), structured("l1", "t", ""), "Content-Type", ctStructured, "Idempotency-Key", long); r.header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("long key retry: %d %v", r.status, r.header)
	}
	if ts.head() != 3 {
		t.Errorf("head %d, want 3", ts.head())
	}
}
