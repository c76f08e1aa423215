package serve_test

import (
	"net/http"
	"testing"

	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/eventlite/eventlite/serve"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/storetest"
)

// The request's per-hop traceparent header parents the append: with
// tracing off the events' stored origin is the request's context itself;
// with a TracerProvider the append span is the request context's child and
// the stored origin is that span. An event's own ce-traceparent is kept
// byte-exact either way.
func TestAppendParentsOnRequestTraceparent(t *testing.T) {
	const (
		hop      = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
		hopState = "vendor=abc"
		own      = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	)
	prop := &serve.Options{Propagator: propagation.TraceContext{}}
	post := func(ts *testServer, stream, id string, header ...string) {
		t.Helper()
		h := append([]string{"Content-Type", ctStructured, "traceparent", hop, "tracestate", hopState}, header...)
		if res := ts.do("POST", streamEvents("default", stream), structured(id, "t.happened", `{"n":1}`), h...); res.status != http.StatusCreated {
			t.Fatalf("append: %d %s", res.status, res.body)
		}
	}
	ext := func(ts *testServer, stream string) (string, string) {
		t.Helper()
		evs := ts.events("default", stream)
		if len(evs) != 1 {
			t.Fatalf("%d events, want 1", len(evs))
		}
		tp, _ := evs[0].Extensions["traceparent"].(string)
		tstate, _ := evs[0].Extensions["tracestate"].(string)
		return tp, tstate
	}

	t.Run("tracing off", func(t *testing.T) {
		ts := newServer(t, prop)
		post(ts, "s1", "e1")
		if tp, tstate := ext(ts, "s1"); tp != hop || tstate != hopState {
			t.Errorf("stored origin %q %q, want the request's %q %q", tp, tstate, hop, hopState)
		}
		// Without the header nothing is stamped.
		if res := ts.do("POST", streamEvents("default", "s2"), structured("e2", "t.happened", `{}`), "Content-Type", ctStructured); res.status != http.StatusCreated {
			t.Fatalf("append: %d %s", res.status, res.body)
		}
		if tp, _ := ext(ts, "s2"); tp != "" {
			t.Errorf("an append without a traceparent header stored %q", tp)
		}
	})

	t.Run("tracing on", func(t *testing.T) {
		rec := tracetest.NewSpanRecorder()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
		defer tp.Shutdown(t.Context())
		s := storetest.MustOpen(t, &store.Options{TracerProvider: tp})
		ts := serverOn(t, s, prop)
		post(ts, "s1", "e1")
		// The event's own ce-traceparent (structured mode: an attribute)
		// is its origin, byte-exact, whatever the header says.
		body := []byte(`{"specversion":"1.0","id":"e2","source":"/test","type":"t.happened","traceparent":"` + own + `","data":{}}`)
		if res := ts.do("POST", streamEvents("default", "s2"), body, "Content-Type", ctStructured, "traceparent", hop); res.status != http.StatusCreated {
			t.Fatalf("append: %d %s", res.status, res.body)
		}
		var appends []sdktrace.ReadOnlySpan
		for _, sp := range rec.Ended() {
			if sp.Name() == "append" {
				appends = append(appends, sp)
			}
		}
		if len(appends) != 2 {
			t.Fatalf("%d append spans, want 2", len(appends))
		}
		for _, sp := range appends {
			if got := sp.Parent().TraceID().String(); got != "4bf92f3577b34da6a3ce929d0e0e4736" || sp.Parent().SpanID().String() != "00f067aa0ba902b7" || !sp.Parent().IsRemote() {
				t.Errorf("append span's parent %v, want the request's remote context", sp.Parent())
			}
		}
		stored, _ := ext(ts, "s1")
		want := "00-" + appends[0].SpanContext().TraceID().String() + "-" + appends[0].SpanContext().SpanID().String() + "-01"
		if stored != want {
			t.Errorf("stored origin %q, want the append span %q", stored, want)
		}
		if got, _ := ext(ts, "s2"); got != own {
			t.Errorf("the event's own traceparent became %q, want %q byte-exact", got, own)
		}
	})
}
