package publish_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/eventlite/eventlite/publish"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/storetest"
)

// Over HTTP binary mode, each request carries the per-message send span
// as its traceparent header and the stored origin, byte-exact, as
// ce-traceparent.
func TestRelayTracesToHTTP(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer tp.Shutdown(context.Background())
	var (
		mu  sync.Mutex
		got []http.Header
	)
	sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Header.Clone())
		mu.Unlock()
	}))
	defer sink.Close()
	s := storetest.MustOpen(t, &store.Options{TracerProvider: tp})
	const given = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	e1, e2 := newEvent(t, "a", 1), newEvent(t, "a", 2)
	e2.Extensions = map[string]any{"traceparent": given, "tracestate": "congo=t61rcWkgMzE"}
	res, err := s.Append(context.Background(), "default", "s", store.Any, e1, e2)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := publish.NewHTTP(publish.HTTPOptions{URL: sink.URL})
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	r, err := publish.New(publish.Options{Store: s, Publisher: pub, Once: true, TracerProvider: tp, Propagator: propagation.TraceContext{}})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	hop := map[string]string{}
	for _, sp := range rec.Ended() {
		if sp.Name() == "send" && sp.SpanKind() == trace.SpanKindProducer {
			sc := sp.SpanContext()
			for _, kv := range sp.Attributes() {
				if kv.Key == "messaging.message.id" {
					hop[kv.Value.AsString()] = "00-" + sc.TraceID().String() + "-" + sc.SpanID().String() + "-" + sc.TraceFlags().String()
				}
			}
			if sp.Parent().TraceID() != sc.TraceID() || !sp.Parent().IsValid() {
				t.Errorf("message span %v has no parent in its trace", sp)
			}
		}
	}
	if len(got) != 2 {
		t.Fatalf("%d requests", len(got))
	}
	for i, h := range got {
		e := res.Events[i]
		if want := e.Extensions["traceparent"]; h.Get("Ce-Traceparent") != want {
			t.Errorf("request %d: ce-traceparent %q, want the stored %q", i, h.Get("Ce-Traceparent"), want)
		}
		if h.Get("Traceparent") != hop[e.ID] || hop[e.ID] == "" {
			t.Errorf("request %d: traceparent %q, want the message span's %q", i, h.Get("Traceparent"), hop[e.ID])
		}
	}
	if got[1].Get("Ce-Tracestate") != "congo=t61rcWkgMzE" || got[1].Get("Tracestate") != "congo=t61rcWkgMzE" {
		t.Errorf("tracestate: ce- %q, per hop %q; want the stored one in both", got[1].Get("Ce-Tracestate"), got[1].Get("Tracestate"))
	}
}
