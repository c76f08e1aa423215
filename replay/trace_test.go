package replay_test

import (
	"context"
	"math/rand/v2"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/eventlite/eventlite/replay"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/storetest"
)

// A rebuild is a trace of its own, caller's span or not, with no links to
// the traces of the events it replays, and its progress as span events.
func TestRebuildSpan(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer tp.Shutdown(context.Background())
	s := storetest.MustOpen(t, &store.Options{TracerProvider: tp})
	appendRandom(t, s, rand.New(rand.NewPCG(1, 2)), 50)
	p := ledger("traced", testTypes, nil)
	ctx, caller := tp.Tracer("test").Start(context.Background(), "operator")
	if _, err := replay.Rebuild(ctx, s, p, &replay.Options{TracerProvider: tp, BatchSize: 10}); err != nil {
		t.Fatal(err)
	}
	caller.End()
	var rb sdktrace.ReadOnlySpan
	for _, sp := range rec.Ended() {
		if sp.Name() == "rebuild" {
			rb = sp
		}
	}
	if rb == nil {
		t.Fatal("no rebuild span")
	}
	if rb.Parent().IsValid() || rb.SpanContext().TraceID() == caller.SpanContext().TraceID() || len(rb.Links()) != 0 {
		t.Errorf("rebuild span: parent %v, links %v; want a trace of its own without links", rb.Parent(), rb.Links())
	}
	phases := map[string]bool{}
	for _, ev := range rb.Events() {
		if ev.Name != "progress" {
			continue
		}
		for _, kv := range ev.Attributes {
			if kv.Key == "eventlite.replay.phase" {
				phases[kv.Value.AsString()] = true
			}
		}
	}
	for _, ph := range []replay.Phase{replay.PhaseRebuild, replay.PhaseSwap, replay.PhaseDone} {
		if !phases[string(ph)] {
			t.Errorf("no progress event in phase %s (saw %v)", ph, phases)
		}
	}
}
