package publish_test

import (
	"bytes"
	"net"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	cehttp "github.com/cloudevents/sdk-go/v2/protocol/http"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/publish"
	"github.com/eventlite/eventlite/publish/publishtest"
)

// TestPublisherSuite runs the exported publisher suite on the HTTP
// publisher, in both modes, and on stdout (the NATS publisher runs it in
// natsjs).
func TestPublisherSuite(t *testing.T) {
	for _, d := range []struct {
		name string
		d    publishtest.Driver
	}{
		{"http-binary", publishtest.Driver{Open: func(t *testing.T) (publish.Publisher, publishtest.Sink) { return openHTTP(t, false) }}},
		{"http-structured", publishtest.Driver{Open: func(t *testing.T) (publish.Publisher, publishtest.Sink) { return openHTTP(t, true) }}},
		{"stdout", publishtest.Driver{Open: openStdout, PingBlind: true, NoHeaders: true}},
	} {
		t.Run(d.name, func(t *testing.T) { publishtest.RunPublisherSuite(t, d.d) })
	}
}

// httpSink is a real CloudEvents HTTP server on 127.0.0.1 that reads
// events with sdk-go. Events of type test.poison get 400; after failNext
// the next requests get 503 (after the sink recorded nothing).
type httpSink struct {
	mu   sync.Mutex
	got  []publishtest.Delivery
	fail int
	addr string
	srv  *http.Server
}

func openHTTP(t *testing.T, structured bool) (publish.Publisher, publishtest.Sink) {
	s := &httpSink{}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.addr = ln.Addr().String()
	s.serve(ln)
	t.Cleanup(func() { s.srv.Close() })
	p, err := publish.NewHTTP(publish.HTTPOptions{URL: "http://" + s.addr + "/events", Structured: structured, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p, s
}

func (s *httpSink) serve(ln net.Listener) {
	s.srv = &http.Server{Handler: http.HandlerFunc(s.handle)}
	go s.srv.Serve(ln)
}

func (s *httpSink) handle(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodOptions {
		w.WriteHeader(http.StatusOK)
		return
	}
	ce, err := cehttp.NewEventFromHTTPRequest(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	e, err := envelope.FromCloudEvent(*ce, -1)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.fail > 0:
		s.fail--
		http.Error(w, "try later", http.StatusServiceUnavailable)
		return
	case e.Type == "test.poison":
		http.Error(w, "not this one", http.StatusBadRequest)
		return
	}
	h := make(map[string]string, len(r.Header))
	for k, v := range r.Header {
		h[k] = v[0]
	}
	s.got = append(s.got, publishtest.Delivery{Event: e, Headers: h})
	w.WriteHeader(http.StatusAccepted)
}

func (s *httpSink) Received(*testing.T) []publishtest.Delivery {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]publishtest.Delivery(nil), s.got...)
}
func (s *httpSink) Dedupes() bool     { return false }
func (s *httpSink) Down(t *testing.T) { s.srv.Close() }
func (s *httpSink) Up(t *testing.T) {
	var ln net.Listener
	eventually(t, "the port to be free again", 10*time.Second, func() bool {
		var err error
		ln, err = net.Listen("tcp", s.addr)
		return err == nil
	})
	s.serve(ln)
}
func (s *httpSink) Refuse(t *testing.T, e *envelope.Event) bool {
	e.Type = "test.poison"
	return true
}
func (s *httpSink) FailNext(t *testing.T, n int) bool {
	s.mu.Lock()
	s.fail = n
	s.mu.Unlock()
	return true
}

// stdoutSink is a buffer behind a writer that can break like a closed
// pipe.
type stdoutSink struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	broken bool
}

func openStdout(t *testing.T) (publish.Publisher, publishtest.Sink) {
	s := &stdoutSink{}
	return publish.NewStdout(s), s
}

func (s *stdoutSink) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.broken {
		return 0, &net.OpError{Op: "write", Err: syscall.EPIPE}
	}
	return s.buf.Write(p)
}

func (s *stdoutSink) Received(t *testing.T) []publishtest.Delivery {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []publishtest.Delivery
	for _, line := range strings.Split(strings.TrimSuffix(s.buf.String(), "\n"), "\n") {
		if line == "" {
			continue
		}
		e, err := envelope.DecodeJSON([]byte(line), -1)
		if err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		out = append(out, publishtest.Delivery{Event: e})
	}
	return out
}
func (s *stdoutSink) Dedupes() bool { return false }
func (s *stdoutSink) Down(t *testing.T) {
	s.mu.Lock()
	s.broken = true
	s.mu.Unlock()
}
func (s *stdoutSink) Up(t *testing.T) {
	s.mu.Lock()
	s.broken = false
	s.mu.Unlock()
}
func (s *stdoutSink) Refuse(*testing.T, *envelope.Event) bool { return false }
func (s *stdoutSink) FailNext(*testing.T, int) bool           { return false }
