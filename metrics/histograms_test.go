package metrics_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/metrics"
	"github.com/eventlite/eventlite/projection"
	"github.com/eventlite/eventlite/publish"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/storetest"
)

// The append, publish and projection batch histograms carry the trace of
// each observation as an exemplar, served in the OpenMetrics format.
func TestHistogramsCarryExemplars(t *testing.T) {
	ctx := context.Background()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer tp.Shutdown(ctx)
	hist := metrics.NewHistograms()
	s := storetest.MustOpen(t, &store.Options{TracerProvider: tp, Latency: hist})
	e, err := envelope.New("t", map[string]int{"n": 1})
	if err != nil {
		t.Fatal(err)
	}
	e.Source = "/t"
	if _, err := s.Append(ctx, "default", "s", store.Any, e); err != nil {
		t.Fatal(err)
	}
	r, err := publish.New(publish.Options{Store: s, Publisher: publish.NewStdout(io.Discard), Once: true, TracerProvider: tp, Latency: hist})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Run(ctx); err != nil {
		t.Fatal(err)
	}
	runner, err := projection.NewRunner(s, projection.Projection{Name: "p", Apply: func(context.Context, *projection.Tx, envelope.Event) error { return nil }},
		&projection.RunnerOptions{TracerProvider: tp, Latency: hist})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := runner.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	traceOf := map[string]string{} // span name and kind -> trace id
	for _, sp := range rec.Ended() {
		traceOf[sp.Name()+"/"+sp.SpanKind().String()] = sp.SpanContext().TraceID().String()
	}

	reg := prometheus.NewRegistry()
	reg.MustRegister(hist)
	srv := httptest.NewServer(metrics.Handler(reg))
	defer srv.Close()
	req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
	req.Header.Set("Accept", "application/openmetrics-text; version=1.0.0")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for name, span := range map[string]string{
		"eventlite_append_duration_seconds":           "append/producer",
		"eventlite_publish_duration_seconds":          "send/client",
		"eventlite_projection_batch_duration_seconds": "process/consumer",
	} {
		// The exemplar's labels come in either order.
		re := regexp.MustCompile(name + `_bucket\{le="[^"]+"\} 1 # \{[^}]*trace_id="` + traceOf[span] + `"[^}]*\}`)
		if traceOf[span] == "" || !re.Match(body) {
			t.Errorf("%s: no bucket with an exemplar of the %s span's trace %q in:\n%s", name, span, traceOf[span], body)
		}
	}
}
