package natsjs_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/natsjs"
	"github.com/eventlite/eventlite/natsjs/natstest"
	"github.com/eventlite/eventlite/publish"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/storetest"
)

func w3c(sc trace.SpanContext) string {
	return "00-" + sc.TraceID().String() + "-" + sc.SpanID().String() + "-" + sc.TraceFlags().String()
}

// The relay sends each message with its per-message send span as the
// lowercase per-hop traceparent header, parented on the event's stored
// origin, while ce-traceparent keeps the origin byte-exact; the round's
// send span is a trace of its own linked to the valid origins. Decoding
// ignores the per-hop headers.
func TestRelayTracesToNATS(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer tp.Shutdown(context.Background())
	s := storetest.MustOpen(t, &store.Options{TracerProvider: tp})
	srv := natstest.RunJetStream(t, nil)
	p := newNATS(t, srv.URL(), natsjs.Options{})

	traced := newEvent(t, "order.placed", map[string]int{"n": 1})
	const odd = "00-4BF92F3577B34DA6A3CE929D0E0E4736-00F067AA0BA902B7-01" // stored, not W3C
	given := newEvent(t, "order.placed", map[string]int{"n": 2})
	given.Extensions = map[string]any{"traceparent": odd}
	res, err := s.Append(context.Background(), "default", "o-1", store.Any, traced, given)
	if err != nil {
		t.Fatal(err)
	}
	origin := res.Events[0].Extensions["traceparent"].(string)
	appendSpan := rec.Ended()[0]

	r := newRelay(t, publish.Options{Store: s, Publisher: p, Once: true, TracerProvider: tp, Propagator: propagation.TraceContext{}})
	if err := r.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	var round sdktrace.ReadOnlySpan
	msgSpans := map[string]sdktrace.ReadOnlySpan{} // by message id
	for _, sp := range rec.Ended() {
		if sp.Name() != "send" {
			continue
		}
		if sp.SpanKind() == trace.SpanKindClient {
			round = sp
			continue
		}
		for _, kv := range sp.Attributes() {
			if kv.Key == "messaging.message.id" {
				msgSpans[kv.Value.AsString()] = sp
			}
		}
	}
	if round == nil || round.Parent().IsValid() {
		t.Fatalf("no root round span: %v", round)
	}
	if l := round.Links(); len(l) != 1 || w3c(l[0].SpanContext) != origin {
		t.Errorf("round links %v, want the one valid origin %s", l, origin)
	}
	m0, m1 := msgSpans[res.Events[0].ID], msgSpans[res.Events[1].ID]
	if m0 == nil || m1 == nil {
		t.Fatalf("message spans %v", msgSpans)
	}
	if m0.Parent().SpanID() != appendSpan.SpanContext().SpanID() || m0.SpanContext().TraceID() != appendSpan.SpanContext().TraceID() {
		t.Errorf("first message span's parent %v, want the append span", m0.Parent())
	}
	if m1.Parent().SpanID() != round.SpanContext().SpanID() {
		t.Errorf("message span of an invalid origin: parent %v, want the round", m1.Parent())
	}

	msgs := srv.Messages(t, natsjs.DefaultStream)
	if len(msgs) != 2 {
		t.Fatalf("%d messages", len(msgs))
	}
	for i, m := range msgs {
		h := m.Headers()
		want := []string{origin, odd}[i]
		if got := h["ce-traceparent"]; len(got) != 1 || got[0] != want {
			t.Errorf("message %d: ce-traceparent %q, want the stored %q", i, got, want)
		}
		hop := w3c([]sdktrace.ReadOnlySpan{m0, m1}[i].SpanContext())
		if got := h["traceparent"]; len(got) != 1 || got[0] != hop {
			t.Errorf("message %d: per-hop traceparent %q, want the message span's %q (lowercase key)", i, got, hop)
		}
		e, err := natsjs.DecodeMessage(m, 0)
		if err != nil {
			t.Fatal(err)
		}
		if e.Extensions["traceparent"] != want || len(e.Extensions) != 1 {
			t.Errorf("message %d decodes to extensions %v, want only the stored traceparent", i, e.Extensions)
		}
	}
}

// The per-hop headers count toward max_payload: an event that fits
// without them is refused with them, before it is sent.
func TestHopHeadersCountTowardMaxPayload(t *testing.T) {
	const limit = 1024
	srv := natstest.RunJetStream(t, &natstest.ServerOptions{MaxPayload: limit})
	p := newNATS(t, srv.URL(), natsjs.Options{})
	event := func(n int) envelope.Event {
		return envelope.Event{ID: "1", Source: "/s", Type: "t", Tenant: "default", Stream: "s", StreamVersion: 1, Data: []byte(strings.Repeat("x", n)), DataContentType: "text/plain"}
	}
	res := p.Publish(context.Background(), publish.Messages(event(2*limit)))
	var tl *natsjs.TooLargeError
	if !errors.As(res[0].Err, &tl) {
		t.Fatalf("measuring: %v", res[0].Err)
	}
	fits := event(2*limit - int(tl.Size-limit) - 40) // 40 bytes under the limit
	hop := map[string]string{"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}
	res = p.Publish(context.Background(), []publish.Message{{Event: fits, Headers: hop}})
	if !errors.As(res[0].Err, &tl) {
		t.Errorf("with per-hop headers: %v, want a *TooLargeError", res[0].Err)
	}
	if res = p.Publish(context.Background(), publish.Messages(fits)); res[0].Err != nil {
		t.Errorf("without per-hop headers: %v", res[0].Err)
	}
}
