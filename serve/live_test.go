package serve_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/eventlite/eventlite/serve"
	"github.com/eventlite/eventlite/store"
)

// frame is one SSE message, or a comment.
type frame struct {
	id, event, data, comment string
	retry                    string
}

type sseClient struct {
	t    testing.TB
	res  *http.Response
	r    *bufio.Reader
	stop context.CancelFunc
}

func openSSE(t testing.TB, url string, header ...string) *sseClient {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
	req.Header.Set("Accept", "text/event-stream")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != 200 || res.Header.Get("Content-Type") != "text/event-stream" {
		b, _ := io.ReadAll(res.Body)
		t.Fatalf("SSE: %d %v %s", res.StatusCode, res.Header, b)
	}
	c := &sseClient{t: t, res: res, r: bufio.NewReader(res.Body), stop: cancel}
	t.Cleanup(c.close)
	return c
}

func (c *sseClient) close() { c.stop(); c.res.Body.Close() }

// next reads the next frame; ok is false at the end of the stream.
func (c *sseClient) next() (frame, bool) {
	var f frame
	seen := false
	for {
		line, err := c.r.ReadString('\n')
		if err != nil {
			return f, false
		}
		line = strings.TrimSuffix(line, "\n")
		if line == "" {
			if seen {
				return f, true
			}
			continue
		}
		seen = true
		k, v, _ := strings.Cut(line, ":")
		v = strings.TrimPrefix(v, " ")
		switch k {
		case "":
			f.comment = v
		case "id":
			f.id = v
		case "event":
			f.event = v
		case "data":
			f.data = v
		case "retry":
			f.retry = v
		}
	}
}

// events reads frames until n events arrived (skipping heartbeats and
// caught-up), returning their ids.
func (c *sseClient) events(n int) []string {
	c.t.Helper()
	var ids []string
	for len(ids) < n {
		f, ok := c.next()
		if !ok {
			c.t.Fatalf("stream ended after %v", ids)
		}
		if f.event == "" && f.data != "" {
			var e map[string]any
			if err := json.Unmarshal([]byte(f.data), &e); err != nil {
				c.t.Fatalf("data %q: %v", f.data, err)
			}
			if e["position"] != f.id {
				c.t.Fatalf("id %q, position %v", f.id, e["position"])
			}
			ids = append(ids, f.id)
		}
	}
	return ids
}

func (c *sseClient) until(event string) frame {
	c.t.Helper()
	for {
		f, ok := c.next()
		if !ok {
			c.t.Fatalf("stream ended before %q", event)
		}
		if f.event == event || (event == "hb" && f.comment == "hb") {
			return f
		}
	}
}

// SSE on the log: retry first, history with ids, caught-up with the last
// position, then live events, heartbeats; a reconnect with Last-Event-ID
// resumes with no gap and no duplicate, and beats from.
func TestSSELog(t *testing.T) {
	ts := newServer(t, nil)
	ts.appendN("default", "a", 3, "t")
	ts.appendN("other", "a", 1, "t")
	url := ts.url + "/v1/tenants/default/events?heartbeat=200ms"
	c := openSSE(t, url)
	if f, _ := c.next(); f.retry != "1000" {
		t.Fatalf("first frame %+v, want retry: 1000", f)
	}
	if got := c.events(3); strings.Join(got, ",") != "1,2,3" {
		t.Fatalf("history %v", got)
	}
	if f := c.until("caught-up"); f.data != `{"position":"3"}` || f.id != "" {
		t.Errorf("caught-up %+v", f)
	}
	ts.appendN("default", "b", 2, "t")
	if got := c.events(2); strings.Join(got, ",") != "5,6" {
		t.Fatalf("live %v", got)
	}
	c.until("hb")
	c.close() // a dropped connection
	ts.appendN("default", "c", 2, "t")
	c2 := openSSE(t, url+"&from=1", "Last-Event-ID", "5")
	if got := c2.events(3); strings.Join(got, ",") != "6,7,8" {
		t.Fatalf("resumed %v, want 6,7,8", got)
	}
	if f := c2.until("caught-up"); f.data != `{"position":"8"}` {
		t.Errorf("caught-up %+v", f)
	}
}

// SSE on a stream: live, and resume by Last-Event-ID (a position).
func TestSSEStream(t *testing.T) {
	ts := newServer(t, nil)
	ts.appendN("default", "s", 2, "t")
	ts.appendN("default", "x", 1, "t")
	ts.appendN("default", "s", 1, "u")
	url := ts.url + streamEvents("default", "s")
	c := openSSE(t, url+"?from=2")
	if got := c.events(2); strings.Join(got, ",") != "2,4" {
		t.Fatalf("history %v", got)
	}
	c.until("caught-up")
	ts.appendN("default", "x", 1, "u")
	ts.appendN("default", "s", 1, "v")
	if got := c.events(1); got[0] != "6" {
		t.Fatalf("live %v", got)
	}
	c2 := openSSE(t, url, "Last-Event-ID", "2")
	if got := c2.events(2); strings.Join(got, ",") != "4,6" {
		t.Fatalf("resumed %v", got)
	}
	// A stream that does not exist yet is waited for.
	c3 := openSSE(t, ts.url+streamEvents("default", "later"))
	c3.until("caught-up")
	ts.appendN("default", "later", 1, "t")
	if got := c3.events(1); got[0] != "7" {
		t.Fatalf("later %v", got)
	}
}

// ndjson with follow=true: one event per line, then new ones; an empty
// line is the heartbeat.
func TestNDJSONFollow(t *testing.T) {
	ts := newServer(t, nil)
	ts.appendN("default", "s", 1, "t")
	req, _ := http.NewRequest("GET", ts.url+"/v1/tenants/default/events?follow=true&heartbeat=200ms", nil)
	req.Header.Set("Accept", "application/x-ndjson")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	r := bufio.NewReader(res.Body)
	line, _ := r.ReadString('\n')
	if !strings.Contains(line, `"position":"1"`) {
		t.Fatalf("first line %q", line)
	}
	ts.appendN("default", "s", 1, "u")
	sawHB := false
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if line == "\n" {
			sawHB = true
			continue
		}
		if !strings.Contains(line, `"position":"2"`) {
			t.Fatalf("line %q", line)
		}
		break
	}
	for !sawHB {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		sawHB = line == "\n"
	}
}

// A commit by another Store on the same file (as another process's) is
// seen live.
func TestLiveOtherWriter(t *testing.T) {
	ts := newServer(t, nil)
	other, err := store.Open(context.Background(), ts.s.Path(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	c := openSSE(t, ts.url+"/v1/tenants/default/events")
	c.until("caught-up")
	e := structuredEvent(t, "from-other")
	if _, err := other.Append(context.Background(), "default", "s", store.Any, e); err != nil {
		t.Fatal(err)
	}
	if got := c.events(1); got[0] != "1" {
		t.Fatalf("got %v", got)
	}
}

// Close ends every live reader.
func TestCloseEndsLive(t *testing.T) {
	ts := newServer(t, nil)
	c := openSSE(t, ts.url+"/v1/tenants/default/events")
	c.until("caught-up")
	if err := ts.h.Close(); err != nil {
		t.Fatal(err)
	}
	for {
		if _, ok := c.next(); !ok {
			break
		}
	}
	ts.do("GET", "/v1/tenants/default/events", nil, "Accept", "text/event-stream").wantProblem(t, 503, "busy")
}

// A reader that does not take its data is dropped once a write does not
// complete within WriteTimeout: the server holds no unbounded buffer.
func TestSlowReaderDropped(t *testing.T) {
	dropped := &signalWriter{want: "live reader dropped", seen: make(chan struct{})}
	log := hclog.New(&hclog.LoggerOptions{Level: hclog.Debug, Output: dropped})
	ts := newServer(t, &serve.Options{WriteTimeout: 300 * time.Millisecond, Logger: log})
	addr := strings.TrimPrefix(ts.url, "http://")
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetReadBuffer(128 << 10) // small, yet above the MSS: no silly-window stalls when read later
	}
	fmt.Fprintf(conn, "GET /v1/tenants/default/events HTTP/1.1\r\nHost: %s\r\nAccept: text/event-stream\r\n\r\n", addr)
	// 40 events of 256 KiB: 10 MiB, more than the sockets hold.
	data := `"` + strings.Repeat("x", 256<<10) + `"`
	const n = 40
	for i := 0; i < n; i++ {
		r := ts.do("POST", streamEvents("default", "s"), structured(fmt.Sprintf("big-%d", i), "t", data), "Content-Type", ctStructured)
		if r.status != 201 {
			t.Fatalf("append %d: %d %s", i, r.status, r.body)
		}
	}
	// The server gives up on this reader (it logs so); only then read:
	// the stream ends before all n events.
	<-dropped.seen
	got := 0
	br := bufio.NewReaderSize(conn, 1<<20)
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			break
		}
		if strings.HasPrefix(line, "id: ") {
			got++
		}
	}
	if got >= n {
		t.Fatalf("the slow reader got all %d events: it was buffered, not dropped", got)
	}
	t.Logf("dropped after %d of %d events", got, n)
}

func structuredEvent(t testing.TB, id string) envelopeEvent {
	t.Helper()
	e, err := newEvent("t", map[string]int{"n": 1})
	if err != nil {
		t.Fatal(err)
	}
	e.ID, e.Source = id, "/other"
	return e
}

// signalWriter closes seen when a log line contains want.
type signalWriter struct {
	mu   sync.Mutex
	want string
	seen chan struct{}
	done bool
}

func (w *signalWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.done && strings.Contains(string(p), w.want) {
		w.done = true
		close(w.seen)
	}
	return len(p), nil
}

// A fatal error (here: the store closed under a live reader) sends
// event: error with a problem, then closes the stream.
func TestSSEFatalError(t *testing.T) {
	s, err := store.Open(context.Background(), t.TempDir()+"/events.db", nil)
	if err != nil {
		t.Fatal(err)
	}
	ts := serverOn(t, s, nil)
	c := openSSE(t, ts.url+"/v1/tenants/default/events")
	c.until("caught-up")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	f := c.until("error")
	var p map[string]any
	if err := json.Unmarshal([]byte(f.data), &p); err != nil || p["status"] != 503.0 || p["type"] != serve.ProblemTypeBase+"busy" {
		t.Fatalf("error data %q: %v", f.data, err)
	}
	if _, ok := c.next(); ok {
		t.Error("the stream goes on after event: error")
	}
}
