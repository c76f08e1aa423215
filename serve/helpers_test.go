package serve_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/serve"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/storetest"
)

// testServer is the API on real HTTP (127.0.0.1) over a real store file.
type testServer struct {
	t   testing.TB
	s   *store.Store
	h   *serve.Handler
	url string
}

func newServer(t testing.TB, opts *serve.Options) *testServer {
	t.Helper()
	s := storetest.MustOpen(t, nil)
	return serverOn(t, s, opts)
}

func serverOn(t testing.TB, s *store.Store, opts *serve.Options) *testServer {
	t.Helper()
	h, err := serve.New(s, opts)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(func() {
		_ = h.Close()
		srv.Close()
	})
	return &testServer{t: t, s: s, h: h, url: srv.URL}
}

// response is a finished HTTP exchange.
type response struct {
	status int
	header http.Header
	body   []byte
}

func (r response) problem(t testing.TB) map[string]any {
	t.Helper()
	if ct := r.header.Get("Content-Type"); ct != "application/problem+json" {
		t.Fatalf("status %d, Content-Type %q, want a problem: %s", r.status, ct, r.body)
	}
	var p map[string]any
	if err := json.Unmarshal(r.body, &p); err != nil {
		t.Fatalf("problem %s: %v", r.body, err)
	}
	return p
}

// wantProblem checks the status and the problem's name and type.
func (r response) wantProblem(t testing.TB, status int, name string) map[string]any {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d (%s): %s", r.status, status, name, r.body)
	}
	p := r.problem(t)
	if p["type"] != serve.ProblemTypeBase+name {
		t.Fatalf("problem type %v, want %s: %s", p["type"], name, r.body)
	}
	if p["status"] != float64(status) || p["title"] == "" || p["detail"] == "" {
		t.Fatalf("problem fields: %s", r.body)
	}
	return p
}

func (r response) json(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("status %d, body %s: %v", r.status, r.body, err)
	}
	return m
}

func (ts *testServer) do(method, path string, body []byte, header ...string) response {
	ts.t.Helper()
	return doReq(ts.t, method, ts.url+path, body, header...)
}

func doReq(t testing.TB, method, url string, body []byte, header ...string) response {
	t.Helper()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(context.Background(), method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Add(header[i], header[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return response{status: res.StatusCode, header: res.Header, body: b}
}

// structured is one event as application/cloudevents+json.
func structured(id, typ, data string) []byte {
	s := `{"specversion":"1.0","id":"` + id + `","source":"/test","type":"` + typ + `"`
	if data != "" {
		s += `,"data":` + data
	}
	return []byte(s + "}")
}

func batch(events ...[]byte) []byte {
	return append(append([]byte("["), bytes.Join(events, []byte(","))...), ']')
}

const (
	ctStructured = "application/cloudevents+json"
	ctBatch      = "application/cloudevents-batch+json"
)

func streamEvents(tenant, stream string) string {
	return "/v1/tenants/" + tenant + "/streams/" + stream + "/events"
}

// events reads a stream from the store directly.
func (ts *testServer) events(tenant, stream string) []envelope.Event {
	ts.t.Helper()
	var out []envelope.Event
	for e, err := range ts.s.ReadStream(context.Background(), tenant, stream, store.ReadStreamOptions{}) {
		if err != nil {
			if isNotFound(err) {
				return nil
			}
			ts.t.Fatal(err)
		}
		out = append(out, e)
	}
	return out
}

func (ts *testServer) head() int64 {
	ts.t.Helper()
	h, err := ts.s.Head(context.Background())
	if err != nil {
		ts.t.Fatal(err)
	}
	return h
}

func isNotFound(err error) bool { return errors.Is(err, store.ErrNotFound) }

type envelopeEvent = envelope.Event

var newEvent = envelope.New
