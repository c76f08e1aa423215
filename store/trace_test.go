package store_test

import (
	"bytes"
	"context"
	"errors"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/go-hclog"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/drivertest"
	"github.com/eventlite/eventlite/store/storetest"
)

func tracedStore(t *testing.T, opts *store.Options) (*store.Store, *tracetest.SpanRecorder, *sdktrace.TracerProvider) {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	if opts == nil {
		opts = &store.Options{}
	}
	opts.TracerProvider = tp
	// A propagator that is not W3C: the stored extension is W3C anyway.
	opts.Propagator = propagation.Baggage{}
	return storetest.MustOpen(t, opts), rec, tp
}

func traceparentOf(sc trace.SpanContext) string {
	return "00-" + sc.TraceID().String() + "-" + sc.SpanID().String() + "-" + sc.TraceFlags().String()
}

func attrsOf(kvs []attribute.KeyValue) map[string]string {
	m := map[string]string{}
	for _, kv := range kvs {
		m[string(kv.Key)] = kv.Value.String()
	}
	return m
}

// The append span is each event's creation context: one PRODUCER span
// per Append, parented on the caller's span, its context stored as the
// traceparent/tracestate extension of every event, in the W3C format.
func TestAppendSpanIsStoredAsTraceparent(t *testing.T) {
	s, rec, tp := tracedStore(t, nil)
	ts, err := trace.ParseTraceState("vendor=abc")
	if err != nil {
		t.Fatal(err)
	}
	ctx, parent := tp.Tracer("test").Start(context.Background(), "caller")
	ctx = trace.ContextWithSpanContext(ctx, parent.SpanContext().WithTraceState(ts))
	res, err := s.Append(ctx, "t", "order-1", store.NoStream, drivertest.Event(t, "a", 1), drivertest.Event(t, "b", 2))
	if err != nil {
		t.Fatal(err)
	}
	parent.End()
	spans := rec.Ended()
	if len(spans) != 2 || spans[0].Name() != "append" {
		t.Fatalf("spans %v, want append then caller", spans)
	}
	sp := spans[0]
	if sp.SpanKind() != trace.SpanKindProducer {
		t.Errorf("kind %v, want producer", sp.SpanKind())
	}
	if sp.Parent().SpanID() != parent.SpanContext().SpanID() {
		t.Errorf("append's parent %v, want the caller's span", sp.Parent().SpanID())
	}
	want := map[string]string{
		"messaging.system": "eventlite", "messaging.operation.type": "create", "messaging.operation.name": "append",
		"messaging.batch.message_count": "2", "eventlite.tenant": "t", "eventlite.stream": "order-1",
		"eventlite.stream.version": "2", "eventlite.position.first": "1", "eventlite.position.last": "2",
	}
	if d := cmp.Diff(want, attrsOf(sp.Attributes())); d != "" {
		t.Errorf("attributes (-want +got):\n%s", d)
	}
	wantTP := traceparentOf(sp.SpanContext())
	for i, e := range append(drivertest.ReadStream(t, s, "t", "order-1"), res.Events...) {
		if e.Extensions["traceparent"] != wantTP || e.Extensions["tracestate"] != "vendor=abc" {
			t.Errorf("event %d: traceparent %v tracestate %v, want %s vendor=abc", i, e.Extensions["traceparent"], e.Extensions["tracestate"], wantTP)
		}
	}
}

// tx.Append traces like Append, inside the caller's transaction.
func TestTxAppendSpan(t *testing.T) {
	s, rec, _ := tracedStore(t, nil)
	ctx := context.Background()
	if err := s.Update(ctx, func(tx *store.Tx) error {
		_, err := tx.Append(ctx, "t", "s", store.Any, drivertest.Event(t, "a", 1))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	spans := rec.Ended()
	if len(spans) != 1 || spans[0].Name() != "append" || spans[0].Parent().IsValid() {
		t.Fatalf("spans %v, want one root append span", spans)
	}
	got := drivertest.ReadStream(t, s, "t", "s")[0].Extensions["traceparent"]
	if got != traceparentOf(spans[0].SpanContext()) {
		t.Errorf("stored traceparent %v, want the append span's", got)
	}
}

// A value the caller set is kept byte-exact and linked when it is a valid
// W3C context; an invalid one is stored unchanged, not linked, and logged
// at debug level. The caller's extension maps are never changed.
func TestAppendKeepsCallerTraceparent(t *testing.T) {
	var logs bytes.Buffer
	s, rec, _ := tracedStore(t, &store.Options{Logger: hclog.New(&hclog.LoggerOptions{Output: &logs, Level: hclog.Debug})})
	const valid = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	const invalid = "00-0AF7651916CD43DD8448EB211C80319C-B7AD6B7169203331-01" // upper case is not W3C
	a, b, c := drivertest.Event(t, "a", 1), drivertest.Event(t, "b", 2), drivertest.Event(t, "c", 3)
	a.Extensions = map[string]any{"traceparent": valid, "tracestate": "k=v,  x=y"}
	b.Extensions = map[string]any{"traceparent": invalid, "other": "kept"}
	c.Extensions = map[string]any{"other": "mine"}
	before := []map[string]any{maps.Clone(a.Extensions), maps.Clone(b.Extensions), maps.Clone(c.Extensions)}
	if _, err := s.Append(context.Background(), "t", "s", store.Any, a, b, c); err != nil {
		t.Fatal(err)
	}
	for i, m := range []map[string]any{a.Extensions, b.Extensions, c.Extensions} {
		if d := cmp.Diff(before[i], m); d != "" {
			t.Errorf("caller's extension map %d changed (-before +after):\n%s", i, d)
		}
	}
	sp := rec.Ended()[0]
	got := drivertest.ReadStream(t, s, "t", "s")
	if got[0].Extensions["traceparent"] != valid || got[0].Extensions["tracestate"] != "k=v,  x=y" {
		t.Errorf("event 0: %v, want the caller's values byte-exact", got[0].Extensions)
	}
	if got[1].Extensions["traceparent"] != invalid || got[1].Extensions["tracestate"] != nil || got[1].Extensions["other"] != "kept" {
		t.Errorf("event 1: %v, want the caller's invalid value unchanged", got[1].Extensions)
	}
	if got[2].Extensions["traceparent"] != traceparentOf(sp.SpanContext()) || got[2].Extensions["other"] != "mine" {
		t.Errorf("event 2: %v, want the append span's context beside its own extension", got[2].Extensions)
	}
	links := sp.Links()
	if len(links) != 1 || traceparentOf(links[0].SpanContext) != valid {
		t.Errorf("links %v, want only the valid caller value", links)
	}
	if !strings.Contains(logs.String(), "not a valid W3C context") || !strings.Contains(logs.String(), invalid) {
		t.Errorf("no debug log names the invalid traceparent:\n%s", logs.String())
	}
}

// The stored traceparent/tracestate count toward the event size limit:
// an event that fits without them is refused, and nothing is stored.
func TestTraceparentCountsTowardEventLimit(t *testing.T) {
	base := drivertest.Event(t, "a", "x")
	base.Tenant, base.Stream = "t", "s"
	if err := base.Prepare(time.Now(), 0); err != nil {
		t.Fatal(err)
	}
	limit := base.EventBytes() + 20 // fits bare, not with a 55-byte traceparent
	off := storetest.MustOpen(t, &store.Options{MaxEventBytes: limit, MaxDataBytes: 10})
	if _, err := off.Append(context.Background(), "t", "s", store.Any, base); err != nil {
		t.Fatalf("tracing off: %v", err)
	}
	on, _, _ := tracedStore(t, &store.Options{MaxEventBytes: limit, MaxDataBytes: 10})
	_, err := on.Append(context.Background(), "t", "s", store.Any, base)
	var te *envelope.TooLargeError
	if !errors.As(err, &te) || te.Field != "event" {
		t.Fatalf("tracing on: err %v, want a *TooLargeError on the event", err)
	}
	if h, err := on.Head(context.Background()); err != nil || h != 0 {
		t.Errorf("head %d (%v) after a refused append, want 0", h, err)
	}
}

// With tracing off, an event's origin is the caller's span, if any; with
// neither, no extension is written.
func TestAppendTracingOff(t *testing.T) {
	s := storetest.MustOpen(t, nil)
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{1}, SpanID: trace.SpanID{2}, TraceFlags: trace.FlagsSampled})
	if _, err := s.Append(trace.ContextWithSpanContext(context.Background(), sc), "t", "s", store.Any, drivertest.Event(t, "a", 1)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Append(context.Background(), "t", "s", store.Any, drivertest.Event(t, "a", 1)); err != nil {
		t.Fatal(err)
	}
	got := drivertest.ReadStream(t, s, "t", "s")
	if got[0].Extensions["traceparent"] != traceparentOf(sc) {
		t.Errorf("with a span in ctx: %v, want its context", got[0].Extensions)
	}
	if got[1].Extensions != nil {
		t.Errorf("with no span: extensions %v, want none", got[1].Extensions)
	}
}
