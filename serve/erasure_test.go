package serve_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/erasure"
	"github.com/eventlite/eventlite/store/storetest"
)

// An append over HTTP carrying erasurekey (the ce-erasurekey header in
// binary mode, the attribute in structured mode) is encrypted as a
// library append is; reads over HTTP decrypt; without the store's master
// key it is refused as an invalid event, storing nothing.
func TestServeErasureKey(t *testing.T) {
	key := make([]byte, erasure.MasterKeySize)
	for i := range key {
		key[i] = byte(3*i + 1)
	}
	ts := serverOn(t, storetest.MustOpen(t, &store.Options{MasterKey: key}), nil)
	r := ts.do("POST", streamEvents("default", "u-1"), []byte(`{"email":"bin@x"}`),
		"ce-specversion", "1.0", "ce-id", "b1", "ce-source", "/x", "ce-type", "user.registered", "ce-erasurekey", "alice", "Content-Type", "application/json")
	if r.status != http.StatusCreated {
		t.Fatalf("binary append: status %d: %s", r.status, r.body)
	}
	r = ts.do("POST", streamEvents("default", "u-1"),
		[]byte(`{"specversion":"1.0","id":"s1","source":"/x","type":"user.registered","erasurekey":"alice","data":{"email":"structured@x"}}`),
		"Content-Type", ctStructured)
	if r.status != http.StatusCreated {
		t.Fatalf("structured append: status %d: %s", r.status, r.body)
	}
	r = ts.do("GET", streamEvents("default", "u-1"), nil)
	if r.status != http.StatusOK || !strings.Contains(string(r.body), "bin@x") || !strings.Contains(string(r.body), "structured@x") {
		t.Fatalf("read over HTTP: %d %s", r.status, r.body)
	}
	ctx := context.Background()
	if err := ts.s.Update(ctx, func(tx *store.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT data FROM events`)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var b []byte
			if err := rows.Scan(&b); err != nil {
				return err
			}
			if strings.Contains(string(b), "@x") {
				t.Errorf("stored in clear: %s", b)
			}
		}
		return rows.Err()
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := erasure.For(ts.s).Forget(ctx, "default", "alice"); err != nil {
		t.Fatal(err)
	}
	for _, e := range ts.events("default", "u-1") {
		if !envelope.Erased(e) {
			t.Errorf("after forget: %+v", e)
		}
	}

	plain := newServer(t, nil)
	r = plain.do("POST", streamEvents("default", "u-1"), []byte(`{"email":"bin@x"}`),
		"ce-specversion", "1.0", "ce-id", "b1", "ce-source", "/x", "ce-type", "user.registered", "ce-erasurekey", "alice", "Content-Type", "application/json")
	p := r.wantProblem(t, http.StatusBadRequest, "invalid-event")
	if p["field"] != "erasurekey" || !strings.Contains(p["detail"].(string), "master key") {
		t.Errorf("problem %v", p)
	}
	if plain.head() != 0 {
		t.Error("the refused append stored an event")
	}
}

// unkeyedFingerprint recomputes what serve stored as the fingerprint of
// a structured append before fingerprints were keyed: the plain SHA-256
// of the method, the path and the event as sent.
func unkeyedFingerprint(t *testing.T, path string, body []byte) string {
	t.Helper()
	e, err := envelope.DecodeJSON(body, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	events := sha256.Sum256(append(e.AppendJSON(nil), '\n'))
	h := sha256.New()
	fmt.Fprintf(h, "%s\n%q\n", "POST", path)
	h.Write(events[:])
	return hex.EncodeToString(h.Sum(nil))
}

// The Idempotency-Key fingerprint of an append whose event carries
// erasurekey is keyed by the subject's data key: the ledger never holds
// the plain hash of the request (which would confirm a guess of the
// erased data). A retry before forget replays the first answer; after
// forget it cannot be compared and is refused as an append under the
// forgotten subject, storing nothing.
func TestServeIdempotencyFingerprintKeyed(t *testing.T) {
	key := make([]byte, erasure.MasterKeySize)
	for i := range key {
		key[i] = byte(5*i + 2)
	}
	t.Run("sqlite", func(t *testing.T) {
		testFingerprintKeyed(t, storetest.MustOpen(t, &store.Options{MasterKey: key}))
	})
	t.Run("postgres", func(t *testing.T) {
		addr := storetest.PostgresSchema(t, storetest.PostgresBase(t))
		testFingerprintKeyed(t, storetest.MustOpenPath(t, addr, &store.Options{MasterKey: key}))
	})
}

func testFingerprintKeyed(t *testing.T, s *store.Store) {
	ts := serverOn(t, s, nil)
	ctx := context.Background()
	path := streamEvents("default", "u-1")
	post := func(idem string, body []byte) response {
		return ts.do("POST", path, body, "Content-Type", ctStructured, "Idempotency-Key", idem)
	}
	stored := func(idem string) string {
		t.Helper()
		op, ok, err := ts.s.Aggregates().Operation(ctx, "default", "http:"+idem)
		if err != nil || !ok {
			t.Fatalf("ledger row of %s: %v %v", idem, ok, err)
		}
		return op.InputHash
	}

	// Without erasurekey the fingerprint is the plain hash (this checks
	// the recomputation below).
	plain := []byte(`{"specversion":"1.0","id":"p1","source":"/x","type":"t","data":{"n":1}}`)
	if r := post("k0", plain); r.status != http.StatusCreated {
		t.Fatalf("plain append: %d %s", r.status, r.body)
	}
	if got, want := stored("k0"), unkeyedFingerprint(t, path, plain); got != want {
		t.Fatalf("plain fingerprint %s, recomputed %s", got, want)
	}

	body := []byte(`{"specversion":"1.0","id":"s1","source":"/x","type":"user.registered","erasurekey":"alice","data":{"email":"guess@x"}}`)
	first := post("k1", body)
	if first.status != http.StatusCreated {
		t.Fatalf("first: %d %s", first.status, first.body)
	}
	fp := stored("k1")
	if fp == unkeyedFingerprint(t, path, body) || !strings.HasPrefix(fp, "k1:") {
		t.Fatalf("the ledger holds the unkeyed fingerprint %s of a request under subject alice", fp)
	}
	again := post("k1", body)
	if again.status != http.StatusCreated || again.header.Get("Idempotent-Replayed") != "true" || string(again.body) != string(first.body) {
		t.Fatalf("retry before forget: %d %v %s", again.status, again.header, again.body)
	}
	post("k1", []byte(`{"specversion":"1.0","id":"s1","source":"/x","type":"user.registered","erasurekey":"alice","data":{"email":"other@x"}}`)).
		wantProblem(t, 422, "idempotency-key-mismatch")

	if _, err := erasure.For(ts.s).Forget(ctx, "default", "alice"); err != nil {
		t.Fatal(err)
	}
	head := ts.head()
	if got := stored("k1"); got != fp || got == unkeyedFingerprint(t, path, body) {
		t.Fatalf("after forget the ledger holds %s", got)
	}
	r := post("k1", body)
	p := r.wantProblem(t, http.StatusBadRequest, "invalid-event")
	if p["field"] != "erasurekey" || !strings.Contains(p["detail"].(string), "forgotten") || r.header.Get("Idempotent-Replayed") != "" {
		t.Errorf("retry after forget: %v %v", r.header, p)
	}
	if ts.head() != head {
		t.Error("the refused retry stored an event")
	}

	// A batch naming two subjects: forgetting either refuses the retry.
	two := batch(
		[]byte(`{"specversion":"1.0","id":"c1","source":"/x","type":"t","erasurekey":"carol","data":{"n":1}}`),
		[]byte(`{"specversion":"1.0","id":"d1","source":"/x","type":"t","erasurekey":"dave","data":{"n":2}}`))
	postBatch := func() response {
		return ts.do("POST", streamEvents("default", "u-2"), two, "Content-Type", ctBatch, "Idempotency-Key", "k2")
	}
	if r := postBatch(); r.status != http.StatusCreated {
		t.Fatalf("batch: %d %s", r.status, r.body)
	}
	if r := postBatch(); r.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("batch retry before forget: %d %v %s", r.status, r.header, r.body)
	}
	if _, err := erasure.For(ts.s).Forget(ctx, "default", "dave"); err != nil {
		t.Fatal(err)
	}
	if p := postBatch().wantProblem(t, http.StatusBadRequest, "invalid-event"); p["field"] != "erasurekey" {
		t.Errorf("batch retry after forgetting one subject: %v", p)
	}
}
