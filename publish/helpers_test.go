package publish_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/binding"
	"github.com/cloudevents/sdk-go/v2/binding/spec"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/publish"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/outbox"
)

var getenv = os.Getenv

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

// storedEvents reads the whole log.
func storedEvents(t testing.TB, s *store.Store) []envelope.Event {
	t.Helper()
	var out []envelope.Event
	for e, err := range s.ReadAll(context.Background(), store.ReadAllOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, e)
	}
	return out
}

// outbox reads every outbox row.
func outboxEntries(t testing.TB, s *store.Store) []outbox.Entry {
	t.Helper()
	var out []outbox.Entry
	after := int64(0)
	for {
		es, err := outbox.For(s).Entries(context.Background(), after, 1000)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, es...)
		if len(es) < 1000 {
			return out
		}
		after = es[len(es)-1].Position
	}
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

// manualClock is a Clock that moves only when told to.
type manualClock struct {
	mu      sync.Mutex
	now     time.Time
	waiters []clockWaiter
}

type clockWaiter struct {
	at time.Time
	ch chan time.Time
}

func newManualClock() *manualClock {
	return &manualClock{now: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}
}

func (c *manualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *manualClock) At(t time.Time) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan time.Time, 1)
	if !t.After(c.now) {
		ch <- c.now
		return ch
	}
	c.waiters = append(c.waiters, clockWaiter{at: t, ch: ch})
	return ch
}

// Advance moves the clock and wakes the waiters that fell due.
func (c *manualClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	kept := c.waiters[:0]
	for _, w := range c.waiters {
		if !w.at.After(c.now) {
			w.ch <- c.now
		} else {
			kept = append(kept, w)
		}
	}
	c.waiters = kept
}

var _ publish.Clock = (*manualClock)(nil)

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

// waitFor waits until cond holds over the reports so far, waking on each
// new report.
func (b *batches) waitFor(t testing.TB, what string, cond func([]publish.BatchReport) bool) {
	t.Helper()
	timeout := time.After(60 * time.Second)
	for !cond(b.all()) {
		select {
		case <-b.signal:
		case <-timeout:
			t.Fatalf("timed out waiting for %s; batches: %+v", what, b.all())
		}
	}
}
