package publish_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	cehttp "github.com/cloudevents/sdk-go/v2/protocol/http"
	"github.com/google/go-cmp/cmp"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/natsjs"
	"github.com/eventlite/eventlite/natsjs/natstest"
	"github.com/eventlite/eventlite/publish"
)

// sink is a real destination that a publisher under test sends to, with
// the faults it can be put into.
type sink interface {
	// received returns every copy the destination holds, in arrival
	// order, decoded back into events.
	received(t *testing.T) []envelope.Event
	// dedupes: the destination keeps one copy per message id.
	dedupes() bool
	// down makes the destination unreachable; up brings it back.
	down(t *testing.T)
	up(t *testing.T)
	// refuse turns e into an event the destination refuses for good; it
	// reports false when the destination refuses nothing.
	refuse(t *testing.T, e *envelope.Event) bool
	// failNext makes the next n publishes fail transiently after the
	// destination got them; false when it cannot.
	failNext(t *testing.T, n int) bool
}

// destination opens a publisher to a fresh sink.
type destination struct {
	name string
	open func(t *testing.T) (publish.Publisher, sink)
}

var destinations = []destination{
	{"nats", openNATS},
	{"http-binary", func(t *testing.T) (publish.Publisher, sink) { return openHTTP(t, false) }},
	{"http-structured", func(t *testing.T) (publish.Publisher, sink) { return openHTTP(t, true) }},
	{"stdout", openStdout},
}

// suiteEvents returns events as the store hands them to a relay: tenants,
// streams, versions and positions set, a mix of data and extensions.
func suiteEvents(t *testing.T) []envelope.Event {
	t.Helper()
	type spec struct{ tenant, stream string }
	order := []spec{{"default", "order-1"}, {"acme", "order-1"}, {"default", "order 2 ü"}, {"default", "order-1"},
		{"acme", "order-1"}, {"default", "order 2 ü"}, {"default", "order-1"}}
	versions := map[spec]int64{}
	var out []envelope.Event
	for i, sp := range order {
		versions[sp]++
		e := newEvent(t, "order.updated", map[string]any{"i": i, "text": "a \"quoted\" line\nand more"})
		e.ID = fmt.Sprintf("01J0000000000000000000%04d", i)
		e.Tenant, e.Stream, e.StreamVersion, e.Position = sp.tenant, sp.stream, versions[sp], int64(100+i)
		e.Time = time.Date(2025, 1, 2, 3, 4, 5, 123456789, time.UTC)
		switch i {
		case 1:
			e.Extensions = map[string]any{"traceparent": "00-abc-def-01", "priority": int32(7), "urgent": true}
			e.CorrelationID, e.CausationID = "corr-1", "cause-1"
		case 2:
			e.DataContentType, e.Data = "application/octet-stream", []byte{0, 1, 2, 0xff}
		case 3:
			e.Data = nil
		case 4:
			e.DataSchema = "https://example.com/schemas/order/2"
		}
		out = append(out, e)
	}
	return out
}

func byID(evs []envelope.Event) map[string][]envelope.Event {
	m := map[string][]envelope.Event{}
	for _, e := range evs {
		m[e.Tenant+":"+e.ID] = append(m[e.Tenant+":"+e.ID], e)
	}
	return m
}

func mustPublish(t *testing.T, p publish.Publisher, evs []envelope.Event) []publish.Result {
	t.Helper()
	res := p.Publish(context.Background(), evs)
	if len(res) != len(evs) {
		t.Fatalf("%d results for %d events", len(res), len(evs))
	}
	for i, r := range res {
		if r.Err != nil {
			t.Fatalf("event %d (%s/%s v%d): %v", i, evs[i].Tenant, evs[i].Stream, evs[i].StreamVersion, r.Err)
		}
	}
	return res
}

// TestPublisherSuite runs the same tests on every publisher: delivery,
// order per stream, dedupe and failure classification.
func TestPublisherSuite(t *testing.T) {
	for _, d := range destinations {
		t.Run(d.name, func(t *testing.T) {
			t.Run("delivery", func(t *testing.T) {
				p, s := d.open(t)
				evs := suiteEvents(t)
				mustPublish(t, p, evs)
				got := byID(s.received(t))
				for _, e := range evs {
					copies := got[e.Tenant+":"+e.ID]
					if len(copies) != 1 {
						t.Fatalf("event %s: %d copies, want 1", e.ID, len(copies))
					}
					if diff := cmp.Diff(comparable(e), comparable(copies[0])); diff != "" {
						t.Errorf("event %s as delivered (-sent +got):\n%s", e.ID, diff)
					}
				}
				if len(got) != len(evs) {
					t.Errorf("%d distinct events delivered, want %d", len(got), len(evs))
				}
			})
			t.Run("order per stream", func(t *testing.T) {
				p, s := d.open(t)
				evs := suiteEvents(t)
				// In two calls, so order also holds across calls.
				mustPublish(t, p, evs[:3])
				mustPublish(t, p, evs[3:])
				last := map[string]int64{}
				for _, e := range s.received(t) {
					k := e.Tenant + "/" + e.Stream
					if e.StreamVersion != last[k]+1 {
						t.Errorf("%s: version %d arrived after %d", k, e.StreamVersion, last[k])
					}
					last[k] = e.StreamVersion
				}
			})
			t.Run("dedupe", func(t *testing.T) {
				p, s := d.open(t)
				evs := suiteEvents(t)
				mustPublish(t, p, evs)
				again := mustPublish(t, p, evs)
				got := byID(s.received(t))
				for i, e := range evs {
					copies := got[e.Tenant+":"+e.ID]
					if s.dedupes() {
						if len(copies) != 1 {
							t.Errorf("event %s: %d copies after a repeat, want 1", e.ID, len(copies))
						}
						if !again[i].Duplicate {
							t.Errorf("event %s: the repeat's ack does not say duplicate", e.ID)
						}
						continue
					}
					// No dedupe of its own: every copy is the same event,
					// id included, for the consumer's inbox to collapse.
					if len(copies) != 2 {
						t.Errorf("event %s: %d copies, want 2", e.ID, len(copies))
					}
					for _, c := range copies[1:] {
						if diff := cmp.Diff(comparable(copies[0]), comparable(c)); diff != "" {
							t.Errorf("event %s: copies differ:\n%s", e.ID, diff)
						}
					}
				}
			})
			t.Run("unreachable", func(t *testing.T) {
				p, s := d.open(t)
				evs := suiteEvents(t)
				s.down(t)
				for i, r := range p.Publish(context.Background(), evs) {
					if r.Err == nil || publish.ClassOf(r.Err) != publish.Unreachable {
						t.Errorf("event %d while down: %v (class %v), want unreachable", i, r.Err, publish.ClassOf(r.Err))
					}
				}
				if err := p.Ping(context.Background()); err == nil && d.name != "stdout" {
					t.Errorf("ping while down: nil")
				}
				s.up(t)
				// The destination is back: publishing works again (a
				// client may take a moment to reconnect).
				eventually(t, "publishing after the destination came back", 20*time.Second, func() bool {
					for _, r := range p.Publish(context.Background(), evs) {
						if r.Err != nil {
							return false
						}
					}
					return true
				})
				if err := p.Ping(context.Background()); err != nil {
					t.Errorf("ping once up: %v", err)
				}
				if got := byID(s.received(t)); len(got) != len(evs) {
					t.Errorf("%d events delivered after coming back, want %d", len(got), len(evs))
				}
			})
			t.Run("permanent", func(t *testing.T) {
				p, s := d.open(t)
				evs := suiteEvents(t)
				// evs[3] is order-1 v2 of tenant default; v3 (evs[6])
				// must not be sent after it failed; other streams go on.
				if !s.refuse(t, &evs[3]) {
					t.Skip("this destination refuses no event")
				}
				res := p.Publish(context.Background(), evs)
				for i, r := range res {
					switch i {
					case 3:
						if publish.ClassOf(r.Err) != publish.Permanent || r.Err == nil {
							t.Errorf("refused event: %v (class %v), want permanent", r.Err, publish.ClassOf(r.Err))
						}
					case 6:
						if !errors.Is(r.Err, publish.ErrNotAttempted) {
							t.Errorf("the stream's next event: %v, want ErrNotAttempted", r.Err)
						}
					default:
						if r.Err != nil {
							t.Errorf("event %d of another stream: %v", i, r.Err)
						}
					}
				}
				got := byID(s.received(t))
				if _, ok := got[evs[6].Tenant+":"+evs[6].ID]; ok {
					t.Errorf("the event after a refused one in its stream was delivered")
				}
				if len(got) != len(evs)-2 {
					t.Errorf("%d delivered, want %d", len(got), len(evs)-2)
				}
			})
			t.Run("transient", func(t *testing.T) {
				p, s := d.open(t)
				evs := suiteEvents(t)
				if !s.failNext(t, 1) {
					t.Skip("this destination has no transient failure")
				}
				res := p.Publish(context.Background(), evs[:1])
				if res[0].Err == nil || publish.ClassOf(res[0].Err) != publish.Transient {
					t.Fatalf("got %v (class %v), want transient", res[0].Err, publish.ClassOf(res[0].Err))
				}
				// Tried again, it goes through; a destination that dedupes
				// keeps one copy even if the first try got there.
				mustPublish(t, p, evs)
				got := byID(s.received(t))
				if s.dedupes() && len(got[evs[0].Tenant+":"+evs[0].ID]) != 1 {
					t.Errorf("retried event: %d copies, want 1", len(got[evs[0].Tenant+":"+evs[0].ID]))
				}
				if len(got) != len(evs) {
					t.Errorf("%d events delivered, want %d", len(got), len(evs))
				}
			})
		})
	}
}

// natsSink is a real in-process JetStream server behind a proxy that can
// lose acks.
type natsSink struct {
	srv   *natstest.Server
	proxy *natstest.Proxy
}

const suiteMaxPayload = 64 << 10

func openNATS(t *testing.T) (publish.Publisher, sink) {
	srv := natstest.RunJetStream(t, &natstest.ServerOptions{MaxPayload: suiteMaxPayload})
	proxy := natstest.NewProxy(t, strings.TrimPrefix(srv.URL(), "nats://"))
	p, err := natsjs.NewNATS(context.Background(), natsjs.NATSOptions{URL: proxy.URL(), CreateStream: true, AckTimeout: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p, &natsSink{srv: srv, proxy: proxy}
}

func (s *natsSink) received(t *testing.T) []envelope.Event {
	var out []envelope.Event
	for _, m := range s.srv.Messages(t, natsjs.DefaultStream) {
		out = append(out, decodeNATS(t, m))
	}
	return out
}
func (s *natsSink) dedupes() bool     { return true }
func (s *natsSink) down(t *testing.T) { s.srv.Shutdown() }
func (s *natsSink) up(t *testing.T)   { s.srv.Start() }
func (s *natsSink) refuse(t *testing.T, e *envelope.Event) bool {
	e.DataContentType = "application/octet-stream"
	e.Data = bytes.Repeat([]byte{'x'}, suiteMaxPayload+1)
	return true
}
func (s *natsSink) failNext(t *testing.T, n int) bool {
	s.proxy.DropAcks(n) // stored, but the ack is lost on the way back
	return true
}

// httpSink is a real CloudEvents HTTP server on 127.0.0.1 that reads
// events with sdk-go. Events of type test.poison get 400; after failNext
// the next requests get 503 (after the sink recorded nothing).
type httpSink struct {
	mu     sync.Mutex
	events []envelope.Event
	fail   int
	addr   string
	srv    *http.Server
}

func openHTTP(t *testing.T, structured bool) (publish.Publisher, sink) {
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
	s.events = append(s.events, e)
	w.WriteHeader(http.StatusAccepted)
}

func (s *httpSink) received(*testing.T) []envelope.Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]envelope.Event(nil), s.events...)
}
func (s *httpSink) dedupes() bool     { return false }
func (s *httpSink) down(t *testing.T) { s.srv.Close() }
func (s *httpSink) up(t *testing.T) {
	var ln net.Listener
	eventually(t, "the port to be free again", 10*time.Second, func() bool {
		var err error
		ln, err = net.Listen("tcp", s.addr)
		return err == nil
	})
	s.serve(ln)
}
func (s *httpSink) refuse(t *testing.T, e *envelope.Event) bool {
	e.Type = "test.poison"
	return true
}
func (s *httpSink) failNext(t *testing.T, n int) bool {
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

func openStdout(t *testing.T) (publish.Publisher, sink) {
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

func (s *stdoutSink) received(t *testing.T) []envelope.Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []envelope.Event
	for _, line := range strings.Split(strings.TrimSuffix(s.buf.String(), "\n"), "\n") {
		if line == "" {
			continue
		}
		e, err := envelope.DecodeJSON([]byte(line), -1)
		if err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		out = append(out, e)
	}
	return out
}
func (s *stdoutSink) dedupes() bool { return false }
func (s *stdoutSink) down(t *testing.T) {
	s.mu.Lock()
	s.broken = true
	s.mu.Unlock()
}
func (s *stdoutSink) up(t *testing.T) {
	s.mu.Lock()
	s.broken = false
	s.mu.Unlock()
}
func (s *stdoutSink) refuse(*testing.T, *envelope.Event) bool { return false }
func (s *stdoutSink) failNext(*testing.T, int) bool           { return false }
