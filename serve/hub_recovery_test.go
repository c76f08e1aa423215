package serve

import (
	"bufio"
	"context"
	"fmt"
	"iter"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/storetest"
)

// A read of the hub that fails (an ErrBusy here, once after yielding an
// event) is retried: the live reader already connected receives every
// event committed before, during and after the outage exactly once, a
// reader that connects during the outage is served, and the outage is
// logged once, as is the recovery.
func TestHubRecoversFromAFailedRead(t *testing.T) {
	logs := &logLines{}
	s := storetest.MustOpen(t, nil)
	h, url := hubServer(t, s, logs)

	// Fault injection at the hub's reads of the whole log (a live
	// reader's history is read for its tenant alone): while failing is
	// set, the first failing read yields one event before its error, the
	// others fail at once; failures counts them.
	var failing atomic.Bool
	var failures atomic.Int64
	failed := make(chan int64, 64)
	inner := h.hub.read
	h.hub.read = func(ctx context.Context, o store.ReadAllOptions) iter.Seq2[envelope.Event, error] {
		if o.Tenant != "" || !failing.Load() {
			return inner(ctx, o)
		}
		n := failures.Add(1)
		return func(yield func(envelope.Event, error) bool) {
			defer func() {
				select {
				case failed <- n:
				default: // the test waits for the first ones only
				}
			}()
			if n == 1 {
				for e, err := range inner(ctx, o) {
					if err != nil || !yield(e, nil) {
						return
					}
					break
				}
			}
			yield(envelope.Event{}, fmt.Errorf("read log: injected: %w", store.ErrBusy))
		}
	}

	appendN(t, s, "default", 2)
	c := dialSSE(t, url+"/v1/tenants/default/events")
	if got := c.ids(2); got != "1,2" {
		t.Fatalf("history %s, want 1,2", got)
	}
	failing.Store(true)
	appendN(t, s, "default", 1) // position 3: its read fails
	waitFailures(t, failed, 3)  // three failed reads: one outage
	appendN(t, s, "default", 2) // positions 4 and 5, during the outage
	// A reader that connects during the outage is served: its history
	// comes from the store, its live part from the hub once it recovers.
	c2 := dialSSE(t, url+"/v1/tenants/default/events")
	if got := c2.ids(5); got != "1,2,3,4,5" {
		t.Fatalf("history of a reader that connected during the outage: %s", got)
	}
	failing.Store(false)
	appendN(t, s, "default", 1) // position 6, after it
	if got := c.ids(4); got != "3,4,5,6" {
		t.Fatalf("after the outage the reader got %s, want 3,4,5,6 (no gap, no duplicate)", got)
	}
	if got := c2.ids(1); got != "6" {
		t.Fatalf("the reader that connected during the outage got %s, want 6", got)
	}
	if n := logs.count(hubOutageMsg); n != 1 {
		t.Errorf("the outage (%d failed reads) was logged %d times, want once:\n%s", failures.Load(), n, logs)
	}
	if n := logs.count(hubRecoveryMsg); n != 1 {
		t.Errorf("the recovery was logged %d times, want once:\n%s", n, logs)
	}
}

// waitFailures waits until the n-th injected failure was returned.
func waitFailures(t testing.TB, failed <-chan int64, n int64) {
	t.Helper()
	for {
		select {
		case k := <-failed:
			if k >= n {
				return
			}
		case <-time.After(time.Minute):
			t.Fatalf("the hub read fewer than %d times after a failure: it gave up", n)
		}
	}
}

// hubServer serves s on 127.0.0.1 with logs captured and the hub's
// retries shortened.
func hubServer(t testing.TB, s *store.Store, logs *logLines) (*Handler, string) {
	t.Helper()
	var out hclog.Logger = hclog.NewNullLogger()
	if logs != nil {
		out = hclog.New(&hclog.LoggerOptions{Level: hclog.Info, Output: logs})
	}
	h, err := New(s, &Options{Logger: out})
	if err != nil {
		t.Fatal(err)
	}
	h.hub.retryMin, h.hub.retryMax = time.Millisecond, 2*time.Millisecond
	srv := httptest.NewServer(h)
	t.Cleanup(func() {
		_ = h.Close()
		srv.Close()
	})
	return h, srv.URL
}

func appendN(t testing.TB, s *store.Store, tenant string, n int) {
	t.Helper()
	for range n {
		appendOne(t, s, tenant, "")
	}
}

// appendOne appends one event to tenant's stream "s", with a
// correlation id when corr is not empty.
func appendOne(t testing.TB, s *store.Store, tenant, corr string) int64 {
	t.Helper()
	e := envelope.Event{Source: "/test", Type: "t", CorrelationID: corr}
	res, err := s.Append(context.Background(), tenant, "s", store.Any, e)
	if err != nil {
		t.Fatal(err)
	}
	return res.FirstPosition()
}

// logLines collects log output, line by line.
type logLines struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (l *logLines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logLines) count(sub string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Count(l.buf.String(), sub)
}

func (l *logLines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// sseReader reads the ids of an SSE response.
type sseReader struct {
	t   testing.TB
	r   *bufio.Reader
	res *http.Response
}

func dialSSE(t testing.TB, url string) *sseReader {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
	req.Header.Set("Accept", "text/event-stream")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); res.Body.Close() })
	if res.StatusCode != 200 {
		t.Fatalf("SSE: status %d", res.StatusCode)
	}
	return &sseReader{t: t, r: bufio.NewReader(res.Body), res: res}
}

// ids reads until n events arrived and returns their ids, joined with
// commas. An event: error ends the test.
func (c *sseReader) ids(n int) string {
	c.t.Helper()
	var ids []string
	for len(ids) < n {
		line, err := c.r.ReadString('\n')
		if err != nil {
			c.t.Fatalf("the stream ended after %v: %v", ids, err)
		}
		switch {
		case strings.HasPrefix(line, "id: "):
			ids = append(ids, strings.TrimSpace(line[4:]))
		case strings.HasPrefix(line, "event: error"):
			line, _ = c.r.ReadString('\n')
			c.t.Fatalf("event: error after %v: %s", ids, line)
		}
	}
	return strings.Join(ids, ",")
}

// No store call runs under the hub's mutex: while the hub's first read
// of the head hangs, a subscriber that gives up returns at once, and the
// hub's state can be asked; once the head answers, the waiting
// subscriber is served.
func TestHubSubscribeWaitsOutsideTheMutex(t *testing.T) {
	s := storetest.MustOpen(t, nil)
	h, _ := hubServer(t, s, nil)
	inner := h.hub.head
	arrived, release := make(chan struct{}), make(chan struct{})
	h.hub.head = func(ctx context.Context) (int64, error) {
		close(arrived)
		<-release
		return inner(ctx)
	}
	first := make(chan error, 1)
	go func() {
		_, err := h.hub.subscribe(context.Background(), "acme", hubBuffer)
		first <- err
	}()
	<-arrived // the hub reads the head now, and hangs there
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := h.hub.subscribe(ctx, "beta", hubBuffer); err != context.Canceled {
		t.Fatalf("a subscriber that gave up got %v, want context.Canceled", err)
	}
	if err := h.hub.error(); err != nil {
		t.Fatalf("the hub's error while it starts: %v", err)
	}
	close(release)
	if err := <-first; err != nil {
		t.Fatalf("the first subscriber: %v", err)
	}
}
