// Package publishtest is the conformance suite that every
// publish.Publisher passes (as Watermill's pub/sub test suite is for its
// publishers): delivery, per-hop headers, order per stream, dedupe ids and
// failure classes, against a real destination. eventlite's NATS (natsjs), HTTP and stdout
// publishers run it; a publisher of your own runs it from a test:
//
// It needs no store: a publisher is the same whatever engine its relay
// reads.
//
//	func TestMyPublisher(t *testing.T) {
//		publishtest.RunPublisherSuite(t, publishtest.Driver{
//			Open: func(t *testing.T) (publish.Publisher, publishtest.Sink) { ... },
//		})
//	}
//
// It imports no broker client.
package publishtest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/types"
	"github.com/google/go-cmp/cmp"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/publish"
)

// Sink is the real destination that a publisher under test sends to,
// with the faults it can be put into.
type Sink interface {
	// Received returns every copy the destination holds, in arrival
	// order: each decoded back into its event, with the message's
	// headers.
	Received(t *testing.T) []Delivery
	// Dedupes: the destination keeps one copy per message id
	// ("<tenant>:<event id>").
	Dedupes() bool
	// Down makes the destination unreachable; Up brings it back.
	Down(t *testing.T)
	Up(t *testing.T)
	// Refuse turns e into an event the destination refuses for good; it
	// reports false when the destination refuses nothing.
	Refuse(t *testing.T, e *envelope.Event) bool
	// FailNext makes the next n publishes fail transiently after the
	// destination got them; false when it cannot.
	FailNext(t *testing.T, n int) bool
}

// Delivery is one copy a destination holds.
type Delivery struct {
	// Event is the copy decoded back into an event.
	Event envelope.Event
	// Headers are the message's headers as the destination received them,
	// one value each (the first, for a header given several times); the
	// event's own attributes may be among them. The suite looks a name up
	// without regard to case, as HTTP does. nil for a transport with no
	// headers.
	Headers map[string]string
}

// Driver opens a publisher to a fresh destination for each test.
type Driver struct {
	// Open returns a publisher to a fresh sink, and the sink. Register the
	// publisher's Close and the sink's teardown with t.Cleanup.
	Open func(t *testing.T) (publish.Publisher, Sink)
	// PingBlind: the publisher's Ping cannot see the destination down (a
	// writer such as standard output has nothing to ask), so the suite
	// does not require Ping to fail while it is.
	PingBlind bool
	// NoHeaders: the publisher's transport has no headers (standard
	// output writes the event alone), so the suite does not require a
	// message's per-hop Headers to arrive.
	NoHeaders bool
}

// suiteEvents returns events as the store hands them to a relay: tenants,
// streams, versions and positions set, a mix of data, extensions and
// tags.
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
		case 5:
			// Tags travel as one extension: the separator and the
			// escape inside tags come back byte for byte.
			e.Tags = []string{"order:2", `a,b`, `\`, `x\,y`, "ünï"}
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

// events returns the deliveries' events.
func events(ds []Delivery) []envelope.Event {
	out := make([]envelope.Event, len(ds))
	for i, d := range ds {
		out[i] = d.Event
	}
	return out
}

func mustPublish(t *testing.T, p publish.Publisher, evs []envelope.Event) []publish.Result {
	t.Helper()
	res := p.Publish(context.Background(), publish.Messages(evs...))
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

// RunPublisherSuite runs the publisher conformance suite on d, each test
// as a subtest on a fresh destination: delivery (every event arrives once,
// as sent), hop headers (each message's Headers arrive with it, and a
// message without carries none; skipped with NoHeaders), order per stream
// (across calls too), dedupe (a repeat is
// acknowledged as a duplicate by a destination that dedupes, and is the
// same event, id included, by one that does not), unreachable (every event
// fails Unreachable while the destination is down, and publishing works
// again once it is back), permanent (a refused event fails Permanent, its
// stream's next event is ErrNotAttempted, other streams go on) and
// transient (a failure after the destination got the event is Transient;
// the retry leaves one copy where the destination dedupes).
func RunPublisherSuite(t *testing.T, d Driver) {
	t.Helper()
	t.Run("delivery", func(t *testing.T) {
		p, s := d.Open(t)
		evs := suiteEvents(t)
		mustPublish(t, p, evs)
		got := byID(events(s.Received(t)))
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
	t.Run("hop headers", func(t *testing.T) {
		if d.NoHeaders {
			t.Skip("this publisher's transport has no headers (Driver.NoHeaders)")
		}
		p, s := d.Open(t)
		msgs := publish.Messages(suiteEvents(t)...)
		for i := range msgs {
			if i == 2 {
				continue // a message without per-hop headers
			}
			msgs[i].Headers = map[string]string{
				"traceparent": fmt.Sprintf("00-%032x-%016x-01", i+1, i+1),
				"tracestate":  fmt.Sprintf("eventlite=m%d", i),
			}
		}
		for i, r := range p.Publish(context.Background(), msgs) {
			if r.Err != nil {
				t.Fatalf("message %d: %v", i, r.Err)
			}
		}
		got := map[string]Delivery{}
		for _, dl := range s.Received(t) {
			got[dl.Event.Tenant+":"+dl.Event.ID] = dl
		}
		for i, m := range msgs {
			dl, ok := got[m.Event.Tenant+":"+m.Event.ID]
			if !ok {
				t.Fatalf("message %d was not delivered", i)
			}
			for k, want := range m.Headers {
				if v, ok := header(dl.Headers, k); !ok || v != want {
					t.Errorf("message %d: header %s = %q (present %v), want %q", i, k, v, ok, want)
				}
			}
			if m.Headers == nil {
				if v, ok := header(dl.Headers, "traceparent"); ok {
					t.Errorf("message %d without headers arrived with traceparent %q", i, v)
				}
			}
			if diff := cmp.Diff(comparable(m.Event), comparable(dl.Event)); diff != "" {
				t.Errorf("message %d: the event changed beside its headers (-sent +got):\n%s", i, diff)
			}
		}
	})
	t.Run("order per stream", func(t *testing.T) {
		p, s := d.Open(t)
		evs := suiteEvents(t)
		// In two calls, so order also holds across calls.
		mustPublish(t, p, evs[:3])
		mustPublish(t, p, evs[3:])
		last := map[string]int64{}
		for _, e := range events(s.Received(t)) {
			k := e.Tenant + "/" + e.Stream
			if e.StreamVersion != last[k]+1 {
				t.Errorf("%s: version %d arrived after %d", k, e.StreamVersion, last[k])
			}
			last[k] = e.StreamVersion
		}
	})
	t.Run("dedupe", func(t *testing.T) {
		p, s := d.Open(t)
		evs := suiteEvents(t)
		mustPublish(t, p, evs)
		again := mustPublish(t, p, evs)
		got := byID(events(s.Received(t)))
		for i, e := range evs {
			copies := got[e.Tenant+":"+e.ID]
			if s.Dedupes() {
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
		p, s := d.Open(t)
		evs := suiteEvents(t)
		s.Down(t)
		for i, r := range p.Publish(context.Background(), publish.Messages(evs...)) {
			if r.Err == nil || publish.ClassOf(r.Err) != publish.Unreachable {
				t.Errorf("event %d while down: %v (class %v), want unreachable", i, r.Err, publish.ClassOf(r.Err))
			}
		}
		if err := p.Ping(context.Background()); err == nil && !d.PingBlind {
			t.Errorf("ping while down: nil")
		}
		s.Up(t)
		// The destination is back: publishing works again (a
		// client may take a moment to reconnect).
		eventually(t, "publishing after the destination came back", 20*time.Second, func() bool {
			for _, r := range p.Publish(context.Background(), publish.Messages(evs...)) {
				if r.Err != nil {
					return false
				}
			}
			return true
		})
		if err := p.Ping(context.Background()); err != nil {
			t.Errorf("ping once up: %v", err)
		}
		if got := byID(events(s.Received(t))); len(got) != len(evs) {
			t.Errorf("%d events delivered after coming back, want %d", len(got), len(evs))
		}
	})
	t.Run("permanent", func(t *testing.T) {
		p, s := d.Open(t)
		evs := suiteEvents(t)
		// evs[3] is order-1 v2 of tenant default; v3 (evs[6])
		// must not be sent after it failed; other streams go on.
		if !s.Refuse(t, &evs[3]) {
			t.Skip("this destination refuses no event")
		}
		res := p.Publish(context.Background(), publish.Messages(evs...))
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
		got := byID(events(s.Received(t)))
		if _, ok := got[evs[6].Tenant+":"+evs[6].ID]; ok {
			t.Errorf("the event after a refused one in its stream was delivered")
		}
		if len(got) != len(evs)-2 {
			t.Errorf("%d delivered, want %d", len(got), len(evs)-2)
		}
	})
	t.Run("transient", func(t *testing.T) {
		p, s := d.Open(t)
		evs := suiteEvents(t)
		if !s.FailNext(t, 1) {
			t.Skip("this destination has no transient failure")
		}
		res := p.Publish(context.Background(), publish.Messages(evs[0]))
		if res[0].Err == nil || publish.ClassOf(res[0].Err) != publish.Transient {
			t.Fatalf("got %v (class %v), want transient", res[0].Err, publish.ClassOf(res[0].Err))
		}
		// Tried again, it goes through; a destination that dedupes
		// keeps one copy even if the first try got there.
		mustPublish(t, p, evs)
		got := byID(events(s.Received(t)))
		if s.Dedupes() && len(got[evs[0].Tenant+":"+evs[0].ID]) != 1 {
			t.Errorf("retried event: %d copies, want 1", len(got[evs[0].Tenant+":"+evs[0].ID]))
		}
		if len(got) != len(evs) {
			t.Errorf("%d events delivered, want %d", len(got), len(evs))
		}
	})
}

// header looks name up in h without regard to case.
func header(h map[string]string, name string) (string, bool) {
	if v, ok := h[name]; ok {
		return v, true
	}
	for k, v := range h {
		if strings.EqualFold(k, name) {
			return v, true
		}
	}
	return "", false
}

// newEvent returns an event as a service makes it.
func newEvent(t testing.TB, typ string, data any) envelope.Event {
	t.Helper()
	e, err := envelope.New(typ, data)
	if err != nil {
		t.Fatal(err)
	}
	e.Source = "/publish/test"
	return e
}

// comparable returns e as it survives any CloudEvents binding: extension
// values in their canonical string form (binary mode carries every
// extension as a string), JSON data as stored.
func comparable(e envelope.Event) envelope.Event {
	e = e.Clone()
	if len(e.Extensions) == 0 {
		e.Extensions = nil
	}
	if e.Extensions != nil {
		m := maps.Clone(e.Extensions)
		for k, v := range m {
			s, _ := types.Format(v)
			m[k] = s
		}
		e.Extensions = m
	}
	if len(e.Data) == 0 {
		e.Data = nil
	}
	return e
}

// eventually polls cond until it holds or the deadline passes: for a
// destination that takes a while to come back.
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
