package publish_test

import (
	"context"
	"io"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/projection"
	"github.com/eventlite/eventlite/publish"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/storetest"
)

// A relay round's span and a runner batch's span link to at most 128
// origins, however many events they carry.
func TestBatchSpansLinkAtMost128Origins(t *testing.T) {
	ctx := context.Background()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer tp.Shutdown(ctx)
	s := storetest.MustOpen(t, &store.Options{TracerProvider: tp})
	const n = 130
	for i := range n { // one append each: 130 origins
		if _, err := s.Append(ctx, "default", "s", store.Any, newEvent(t, "t", i)); err != nil {
			t.Fatal(err)
		}
	}
	r, err := publish.New(publish.Options{Store: s, Publisher: publish.NewStdout(io.Discard), Once: true, BatchSize: n, TracerProvider: tp})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Run(ctx); err != nil {
		t.Fatal(err)
	}
	runner, err := projection.NewRunner(s, projection.Projection{Name: "p", Apply: func(context.Context, *projection.Tx, envelope.Event) error { return nil }},
		&projection.RunnerOptions{BatchSize: n, TracerProvider: tp})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := runner.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, sp := range rec.Ended() {
		kind := sp.Name() + "/" + sp.SpanKind().String()
		if kind != "send/client" && kind != "process/consumer" {
			continue
		}
		seen[kind]++
		if got := len(sp.Links()); got != 128 {
			t.Errorf("%s span of %s events: %d links, want 128", kind, sp.Attributes(), got)
		}
		if sp.Parent().IsValid() {
			t.Errorf("%s span has a parent: want a trace of its own", kind)
		}
	}
	if seen["send/client"] != 1 || seen["process/consumer"] != 1 {
		t.Errorf("batch spans %v, want one round and one runner batch", seen)
	}
}
