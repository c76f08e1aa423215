package natsjs_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/natsjs"
	"github.com/eventlite/eventlite/publish"
	"github.com/eventlite/eventlite/store"
)

// The helpers below are publish's test helpers, for the tests that moved
// here with the NATS publisher.

// seed returns a seed for the test's random choices, printed so a
// failure can be replayed with EVENTLITE_SEED.
func seed(t testing.TB) uint64 {
	t.Helper()
	s := rand.Uint64()
	if v := os.Getenv("EVENTLITE_SEED"); v != "" {
		fmt.Sscan(v, &s)
	}
	t.Logf("seed %d (EVENTLITE_SEED=%d to replay)", s, s)
	return s
}

func newNATS(t testing.TB, url string, o natsjs.NATSOptions) *natsjs.NATS {
	t.Helper()
	o.URL = url
	o.CreateStream = true
	p, err := natsjs.NewNATS(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

func newRelay(t testing.TB, o publish.Options) *publish.Relay {
	t.Helper()
	if o.Logger == nil {
		o.Logger = hclog.New(&hclog.LoggerOptions{Name: "test", Level: hclog.Warn, Output: testWriter{t}})
	}
	r, err := publish.New(o)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// testWriter sends logs to t.Log.
type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}

// newEvent returns an event to append.
func newEvent(t testing.TB, typ string, data any) envelope.Event {
	t.Helper()
	e, err := envelope.New(typ, data)
	if err != nil {
		t.Fatal(err)
	}
	e.Source = "/publish/test"
	return e
}

// appendEvents appends n events, one append each, to a tenant's stream
// and returns them as stored.
func appendEvents(t testing.TB, s *store.Store, tenant, stream string, n int) []envelope.Event {
	t.Helper()
	var out []envelope.Event
	for i := range n {
		res, err := s.Append(context.Background(), tenant, stream, store.Any, newEvent(t, "test.happened", map[string]any{"stream": stream, "i": i}))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, res.Events...)
	}
	return out
}

// eventually polls cond until it holds or the deadline passes: for
// conditions that hang on wall-clock time (lease expiry, a server's
// restart) or on another process.
func eventually(t testing.TB, what string, within time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", within, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// batches collects a relay's batch reports and signals each one.
type batches struct {
	mu      sync.Mutex
	reports []publish.BatchReport
	signal  chan struct{}
}

func newBatches() *batches { return &batches{signal: make(chan struct{}, 1)} }

func (b *batches) add(r publish.BatchReport) {
	b.mu.Lock()
	b.reports = append(b.reports, r)
	b.mu.Unlock()
	select {
	case b.signal <- struct{}{}:
	default:
	}
}

func (b *batches) all() []publish.BatchReport {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]publish.BatchReport(nil), b.reports...)
}
