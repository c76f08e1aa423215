// Command otlp shows eventlite's tracing exported to an OpenTelemetry
// collector over OTLP/HTTP: it appends an event and relays it to
// standard output, and the collector receives the append and send spans.
// The OTLP exporter lives in this example's own module, so eventlite
// itself links only the OpenTelemetry API.
//
//	OTEL_EXPORTER_OTLP_ENDPOINT=http://localhost:4318 go run .
package main

import (
	"context"
	"log"
	"os"
	"path/filepath"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/publish"
	"github.com/eventlite/eventlite/store"
)

func main() {
	ctx := context.Background()
	exp, err := otlptracehttp.New(ctx) // OTEL_EXPORTER_OTLP_ENDPOINT, default localhost:4318
	if err != nil {
		log.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp),
		sdktrace.WithResource(resource.NewSchemaless(semconv.ServiceName("orders"))))
	defer tp.Shutdown(ctx)                                // flushes the spans
	otel.SetTracerProvider(tp)                            // store, aggregate, relay, runner, consumer default to it
	otel.SetTextMapPropagator(propagation.TraceContext{}) // per-hop traceparent/tracestate headers

	dir, err := os.MkdirTemp("", "eventlite-otlp")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	s, err := store.Open(ctx, filepath.Join(dir, "orders.db"), nil)
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	e, _ := envelope.New("order.placed", map[string]any{"total": 42})
	e.Source = "/orders"
	if _, err := s.Append(ctx, "default", "order-1", store.NoStream, e); err != nil {
		log.Fatal(err)
	}
	r, err := publish.New(publish.Options{Store: s, Publisher: publish.NewStdout(os.Stdout), Once: true})
	if err != nil {
		log.Fatal(err)
	}
	if err := r.Run(ctx); err != nil {
		log.Fatal(err)
	}
}
