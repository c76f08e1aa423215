package serve_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
)

// 16 writers read the ETag, then POST with If-Match, round after round:
// each round exactly one 201, the rest 412, never a 5xx; versions and
// positions stay gap free.
func TestConcurrentIfMatch(t *testing.T) {
	const writers = 16
	rounds := 20
	if testing.Short() {
		rounds = 5
	}
	ts := newServer(t, nil)
	ts.appendN("default", "s", 1, "seed")
	path := streamEvents("default", "s")
	for round := 0; round < rounds; round++ {
		var read, wrote sync.WaitGroup
		read.Add(writers)
		statuses := make([]int, writers)
		for w := 0; w < writers; w++ {
			wrote.Add(1)
			go func() {
				defer wrote.Done()
				r := doReq(t, "GET", ts.url+"/v1/tenants/default/streams/s", nil)
				read.Done()
				read.Wait() // every writer holds the same ETag
				tag := r.header.Get("ETag")
				p := doReq(t, "POST", ts.url+path, structured(fmt.Sprintf("r%d-w%d", round, w), "t", ""),
					"Content-Type", ctStructured, "If-Match", tag)
				statuses[w] = p.status
			}()
		}
		wrote.Wait()
		created, conflicts := 0, 0
		for _, s := range statuses {
			switch s {
			case http.StatusCreated:
				created++
			case http.StatusPreconditionFailed:
				conflicts++
			default:
				t.Errorf("round %d: status %d", round, s)
			}
		}
		if created != 1 || conflicts != writers-1 {
			t.Fatalf("round %d: %d created, %d conflicts: %v", round, created, conflicts, statuses)
		}
	}
	evs := ts.events("default", "s")
	if len(evs) != rounds+1 {
		t.Fatalf("%d events, want %d", len(evs), rounds+1)
	}
	for i, e := range evs {
		if e.StreamVersion != int64(i+1) || e.Position != int64(i+1) {
			t.Errorf("event %d: version %d position %d", i, e.StreamVersion, e.Position)
		}
	}
}

// Hostile stream ids, percent-encoded in one path segment, are stored and
// read back byte for byte; a too long one is 400.
func TestHostileStreamIDs(t *testing.T) {
	ts := newServer(t, nil)
	ids := []string{"a/b", "a%2Fb", "100%", "with space", `"quoted"`, "it's", "'; DROP TABLE events; --", ".", "..", "...", "a?b#c", "ü+é", "tab\u00a0nbsp", strings.Repeat("x", 200), "a\\b", "%2E%2E"}
	for i, id := range ids {
		seg := url.PathEscape(id)
		switch id {
		case ".":
			seg = "%2E"
		case "..":
			seg = "%2E%2E"
		}
		r := ts.do("POST", "/v1/tenants/default/streams/"+seg+"/events", structured(fmt.Sprintf("h%d", i), "t", ""), "Content-Type", ctStructured)
		if r.status != 201 {
			t.Fatalf("%q: %d %s", id, r.status, r.body)
		}
		if got := r.json(t)["stream"]; got != id {
			t.Errorf("%q: answered stream %q", id, got)
		}
		loc := r.header.Get("Location")
		if r := ts.do("GET", loc, nil); r.status != 200 || r.json(t)["subject"] != id {
			t.Errorf("%q: GET %s: %d %s", id, loc, r.status, r.body)
		}
		evs := ts.events("default", id)
		if len(evs) != 1 || evs[0].Stream != id {
			t.Errorf("%q: stored %+v", id, evs)
		}
		info := ts.do("GET", "/v1/tenants/default/streams/"+seg, nil)
		if info.status != 200 || info.json(t)["stream"] != id || info.json(t)["version"] != 1.0 {
			t.Errorf("%q: info %d %s", id, info.status, info.body)
		}
	}
	ts.do("POST", "/v1/tenants/default/streams/"+strings.Repeat("x", 256)+"/events", structured("long", "t", ""), "Content-Type", ctStructured).
		wantProblem(t, 400, "invalid-stream-id")
	if h := ts.head(); h != int64(len(ids)) {
		t.Errorf("head %d, want %d", h, len(ids))
	}
}
