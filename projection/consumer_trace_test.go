package projection_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/projection"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/storetest"
)

// Each Handle is one process span: parented on the per-hop context that
// Extract read from the headers, else on the event's origin; linked to
// the origin; recording the inbox decision and the deferred events it
// released; status Error only for a quarantine.
func TestConsumerProcessSpans(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer tp.Shutdown(context.Background())
	s := storetest.MustOpen(t, nil)
	c, err := projection.NewConsumer(s, projection.ConsumerOptions{Name: "c", TracerProvider: tp, Propagator: propagation.TraceContext{},
		Apply: func(context.Context, *store.Tx, envelope.Event) error { return nil }})
	if err != nil {
		t.Fatal(err)
	}
	const (
		origin1 = "00-11111111111111111111111111111111-1111111111111111-01"
		origin2 = "00-22222222222222222222222222222222-2222222222222222-01"
		hop2    = "00-22222222222222222222222222222222-3333333333333333-01"
	)
	event := func(id string, v int64, tp string) envelope.Event {
		return envelope.Event{ID: id, Source: "/a", Type: "t", Tenant: "default", Stream: "s", StreamVersion: v,
			DataContentType: "application/json", Data: []byte(`{}`), Extensions: map[string]any{"traceparent": tp}}
	}
	ctx := context.Background()
	hopCtx := c.Extract(ctx, propagation.MapCarrier{"traceparent": hop2})
	steps := []struct {
		ctx    context.Context
		e      envelope.Event
		parent string // span id
		want   string
	}{
		{hopCtx, event("e2", 2, origin2), "3333333333333333", "deferred"},
		{ctx, event("e1", 1, origin1), "1111111111111111", "applied"},
		{ctx, event("e1", 1, origin1), "1111111111111111", "duplicate"},
	}
	for i, st := range steps {
		if _, err := c.Handle(st.ctx, st.e); err != nil {
			t.Fatal(err)
		}
		sp := rec.Ended()[i]
		if sp.Name() != "process" || sp.Parent().SpanID().String() != st.parent {
			t.Errorf("step %d: %s parented on %s, want process on %s", i, sp.Name(), sp.Parent().SpanID(), st.parent)
		}
		if l := sp.Links(); len(l) != 1 || l[0].SpanContext.TraceID().String() != st.e.Extensions["traceparent"].(string)[3:35] {
			t.Errorf("step %d: links %v, want the origin", i, l)
		}
		got := map[string]string{}
		for _, kv := range sp.Attributes() {
			got[string(kv.Key)] = kv.Value.String()
		}
		if got["eventlite.inbox.decision"] != st.want {
			t.Errorf("step %d: decision %q, want %q", i, got["eventlite.inbox.decision"], st.want)
		}
		if st.want == "applied" {
			if got["eventlite.inbox.released"] != "1" {
				t.Errorf("step %d: released %q, want 1 (the deferred e2)", i, got["eventlite.inbox.released"])
			}
			if ev := sp.Events(); len(ev) != 1 || ev[0].Name != "released from deferral" || ev[0].Attributes[0].Value.AsString() != "e2" {
				t.Errorf("step %d: span events %v, want e2 released from deferral", i, ev)
			}
		}
		if sp.Status().Code != codes.Unset {
			t.Errorf("step %d: status %v, want unset", i, sp.Status())
		}
	}
}

// While a span is active, log lines carry its trace and span ids.
func TestConsumerLogsCarryTraceIDs(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer tp.Shutdown(context.Background())
	var logs bytes.Buffer
	s := storetest.MustOpen(t, nil)
	c, err := projection.NewConsumer(s, projection.ConsumerOptions{Name: "c", TracerProvider: tp,
		Logger: hclog.New(&hclog.LoggerOptions{Output: &logs, Level: hclog.Debug, JSONFormat: true}),
		Apply: func(context.Context, *store.Tx, envelope.Event) error {
			return fmt.Errorf("%w: never", projection.ErrUninterpretable)
		}})
	if err != nil {
		t.Fatal(err)
	}
	e := envelope.Event{ID: "e1", Source: "/a", Type: "t", Tenant: "default", Stream: "s", StreamVersion: 1}
	if _, err := c.Handle(context.Background(), e); err != nil {
		t.Fatal(err)
	}
	sp := rec.Ended()[0]
	if sp.Status().Code != codes.Error {
		t.Errorf("quarantine: status %v, want Error", sp.Status())
	}
	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	if len(lines) < 2 {
		t.Fatalf("want a warning and a debug line, got:\n%s", logs.String())
	}
	for _, line := range lines {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatal(err)
		}
		if m["trace_id"] != sp.SpanContext().TraceID().String() || m["span_id"] != sp.SpanContext().SpanID().String() {
			t.Errorf("log line without the process span's ids: %s", line)
		}
	}
}
