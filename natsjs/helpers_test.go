package natsjs_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/binding"
	"github.com/cloudevents/sdk-go/v2/binding/spec"
	"github.com/hashicorp/go-hclog"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

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

func newNATS(t testing.TB, url string, o natsjs.Options) *natsjs.Publisher {
	t.Helper()
	o.URL = url
	o.CreateStream = true
	p, err := natsjs.NewPublisher(context.Background(), o)
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

// natsHeaderMessage reads a NATS message's ce- headers and payload as a
// CloudEvents binary-mode message, as sdk-go's NATS JetStream binding
// reads one.
type natsHeaderMessage struct {
	h    nats.Header
	data []byte
}

var ceSpecs = spec.WithPrefix("ce-")

func (m natsHeaderMessage) ReadEncoding() binding.Encoding { return binding.EncodingBinary }
func (m natsHeaderMessage) ReadStructured(context.Context, binding.StructuredWriter) error {
	return binding.ErrNotStructured
}
func (m natsHeaderMessage) Finish(error) error { return nil }

func (m natsHeaderMessage) GetAttribute(k spec.Kind) (spec.Attribute, any) {
	v := ceSpecs.Version(m.h.Get("ce-specversion"))
	if v == nil {
		return nil, nil
	}
	a := v.AttributeFromKind(k)
	if a == nil {
		return nil, nil
	}
	if s := m.h.Get(a.PrefixedName()); s != "" {
		return a, s
	}
	return a, nil
}

func (m natsHeaderMessage) GetExtension(name string) any {
	if s := m.h.Get("ce-" + name); s != "" {
		return s
	}
	return nil
}

func (m natsHeaderMessage) ReadBinary(ctx context.Context, w binding.BinaryWriter) error {
	v := ceSpecs.Version(m.h.Get("ce-specversion"))
	if v == nil {
		return fmt.Errorf("no ce-specversion header")
	}
	for k, vs := range m.h {
		if !strings.HasPrefix(k, "ce-") {
			continue
		}
		var err error
		if a := v.Attribute(k); a != nil {
			err = w.SetAttribute(a, vs[0])
		} else {
			err = w.SetExtension(strings.TrimPrefix(k, "ce-"), vs[0])
		}
		if err != nil {
			return err
		}
	}
	if m.data != nil {
		return w.SetData(bytes.NewReader(m.data))
	}
	return nil
}

// decodeNATS decodes a stored JetStream message back into an event.
func decodeNATS(t testing.TB, m jetstream.Msg) envelope.Event {
	t.Helper()
	ce, err := binding.ToEvent(context.Background(), natsHeaderMessage{h: m.Headers(), data: m.Data()})
	if err != nil {
		t.Fatalf("decode message %v: %v", m.Headers(), err)
	}
	e, err := envelope.FromCloudEvent(*ce, -1)
	if err != nil {
		t.Fatalf("decode message: %v", err)
	}
	return e
}
