package store

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/hashicorp/go-hclog"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/internal/tracing"
)

// With no TracerProvider set (otel's default global, or a noop provider)
// and no span in the context, the tracing around Append and tx.Append
// (both go through startAppend and end) allocates nothing.
func TestAppendTracingOffAllocatesNothing(t *testing.T) {
	for name, opts := range map[string]*Options{
		"global default": nil,
		"noop provider":  {TracerProvider: noop.NewTracerProvider()},
	} {
		t.Run(name, func(t *testing.T) {
			s, err := Open(context.Background(), filepath.Join(t.TempDir(), "e.db"), opts)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			e, err := envelope.New("t", map[string]int{"n": 1})
			if err != nil {
				t.Fatal(err)
			}
			events := []envelope.Event{e}
			ctx := context.Background()
			res := AppendResult{Version: 1, Events: events}
			n := testing.AllocsPerRun(100, func() {
				_, sp, out := s.startAppend(ctx, "t", "s", events)
				if &out[0] != &events[0] {
					t.Fatal("events were copied with tracing off")
				}
				sp.end(res, nil)
			})
			if n != 0 {
				t.Fatalf("tracing off: %v allocations per append, want 0", n)
			}
		})
	}
}

// BenchmarkAppendSpan measures the tracing around one Append alone (span,
// extension, outcome), without SQLite: "off" with no provider, "on" with
// an SDK provider sampling every span into a batch processor.
func BenchmarkAppendSpan(b *testing.B) {
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()), sdktrace.WithBatcher(discard{}))
	defer tp.Shutdown(context.Background())
	e, err := envelope.New("t", map[string]int{"n": 1})
	if err != nil {
		b.Fatal(err)
	}
	events := []envelope.Event{e}
	res := AppendResult{Version: 1, Events: events}
	for _, c := range []struct {
		name string
		tp   trace.TracerProvider
	}{{"off", nil}, {"on", tp}} {
		b.Run(c.name, func(b *testing.B) {
			s := &Store{trace: tracing.Config{TP: c.tp}, log: hclog.NewNullLogger()}
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				_, sp, _ := s.startAppend(ctx, "t", "s", events)
				sp.end(res, nil)
			}
		})
	}
}

type discard struct{}

func (discard) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discard) Shutdown(context.Context) error                             { return nil }
