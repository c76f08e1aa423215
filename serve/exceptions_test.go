package serve_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/eventlite/eventlite/serve"
	"github.com/eventlite/eventlite/store/storetest"
)

// A query string that does not parse is 400 invalid-parameter naming the
// query, never read as if the broken pair were absent (?from=%zz read
// from the start; ?limit=1;x=2 read without a limit), and an append with
// one stores nothing.
func TestMalformedQuery(t *testing.T) {
	ts := newServer(t, nil)
	ts.appendN("default", "s", 3, "t")
	for _, q := range []string{"from=%zz", "limit=1;x=2", "direction=backward&%", "from=2&limit=%g1"} {
		r := ts.do("GET", streamEvents("default", "s")+"?"+q, nil)
		if p := r.wantProblem(t, 400, "invalid-parameter"); p["field"] != "query" {
			t.Errorf("?%s: %s", q, r.body)
		}
	}
	r := ts.do("POST", streamEvents("default", "s")+"?x=%zz", structured("new", "t", ""), "Content-Type", ctStructured)
	r.wantProblem(t, 400, "invalid-parameter")
	if ts.head() != 3 {
		t.Errorf("head %d, want 3", ts.head())
	}
	if r := ts.do("GET", streamEvents("default", "s")+"?from=2&limit=1", nil); r.status != 200 {
		t.Errorf("a good query: %d %s", r.status, r.body)
	}
}

// TestNetHTTPExceptions: the requests net/http answers itself, before any
// handler runs, are the ones docs/http.md lists, with the status it
// lists and a text/plain body (or none): what the server cannot answer
// as a problem. A request that reaches the handler, however odd, gets
// a problem.
func TestNetHTTPExceptions(t *testing.T) {
	// Handler.Serve's server, as eventlite serve runs it.
	h, err := serve.New(storetest.MustOpen(t, nil), nil)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	addr := ln.Addr().String()
	send := func(req string) (status int, header http.Header) {
		t.Helper()
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		// A safeguard only: each answer comes as soon as the request is read.
		_ = c.SetDeadline(time.Now().Add(30 * time.Second))
		go func() { _, _ = fmt.Fprint(c, req) }()
		res, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("%.50q: %v", req, err)
		}
		res.Body.Close()
		return res.StatusCode, res.Header
	}
	const host = "Host: 127.0.0.1\r\n"
	for _, tc := range []struct {
		name, req string
		status    int
	}{
		{"a bad escape in the path", "GET /v1/tenants/default/streams/%/events HTTP/1.1\r\n" + host + "\r\n", 400},
		{"a request line and headers over 1 MiB", "GET /v1/tenants/default/streams/" + strings.Repeat("a", 1100<<10) + "/events HTTP/1.1\r\n" + host + "\r\n", 431},
		{"no Host", "GET /healthz HTTP/1.1\r\n\r\n", 400},
		{"an unknown HTTP version", "GET /healthz HTTP/9.9\r\n" + host + "\r\n", 505},
		{"an unknown Transfer-Encoding", "POST /v1/tenants/default/events HTTP/1.1\r\n" + host + "Transfer-Encoding: gzip\r\n\r\n", 501},
		{"two Content-Lengths", "POST /v1/tenants/default/events HTTP/1.1\r\n" + host + "Content-Length: 1\r\nContent-Length: 2\r\n\r\n", 400},
		{"an Expect other than 100-continue", "GET /healthz HTTP/1.1\r\n" + host + "Expect: something\r\n\r\n", 417},
		{"a malformed header line", "GET /healthz HTTP/1.1\r\n" + host + "No colon\r\n\r\n", 400},
	} {
		status, hd := send(tc.req)
		if status != tc.status || (hd.Get("Content-Type") != "" && !strings.HasPrefix(hd.Get("Content-Type"), "text/plain")) {
			t.Errorf("%s: %d %q, want net/http's %d text/plain (docs/http.md lists it)", tc.name, status, hd.Get("Content-Type"), tc.status)
		}
	}
	// What reaches the handler is a problem: an asterisk-form request
	// (OPTIONS * too, which net/http's Server answers 200 itself unless
	// told not to), an absolute-form target for another host, a query
	// that does not parse.
	for _, req := range []string{
		"GET * HTTP/1.1\r\n" + host + "\r\n",
		"OPTIONS * HTTP/1.1\r\n" + host + "\r\n",
		"GET http://other.example/nowhere HTTP/1.1\r\n" + host + "\r\n",
		"GET /v1/tenants/default/streams/a/events?from=%zz HTTP/1.1\r\n" + host + "\r\n",
	} {
		if status, hd := send(req); status < 400 || hd.Get("Content-Type") != "application/problem+json" {
			t.Errorf("%.60q: %d %q, want a problem", req, status, hd.Get("Content-Type"))
		}
	}
}
