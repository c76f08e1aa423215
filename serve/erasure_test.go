package serve_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/storetest"
)

// An append over HTTP carrying erasurekey (the ce-erasurekey header in
// binary mode, the attribute in structured mode) is encrypted as a
// library append is; reads over HTTP decrypt; without the store's master
// key it is refused as an invalid event, storing nothing.
func TestServeErasureKey(t *testing.T) {
	key := make([]byte, store.MasterKeySize)
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
	if _, err := ts.s.Erasure().Forget(ctx, "default", "alice"); err != nil {
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
