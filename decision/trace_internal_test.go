package decision

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/trace/noop"

	"github.com/eventlite/eventlite/internal/command"
	"github.com/eventlite/eventlite/internal/tracing"
)

// With no TracerProvider set (otel's default global, or a noop
// provider), the spans around a decision cost nothing: no tracer, and
// the decide wrapper allocates nothing.
func TestTracingOffAllocatesNothing(t *testing.T) {
	for name, cfg := range map[string]tracing.Config{
		"global default": {},
		"noop provider":  {TP: noop.NewTracerProvider()},
	} {
		t.Run(name, func(t *testing.T) {
			h := &Handler[int, struct{}]{opts: command.Options{Trace: cfg}, def: Definition[int, struct{}]{
				Decide: func(int, Command[struct{}]) ([]Event, error) { return nil, nil },
			}}
			ctx := context.Background()
			cmd := Command[struct{}]{Tenant: "default", ID: "c"}
			n := testing.AllocsPerRun(100, func() {
				if h.opts.Trace.Tracer() != nil {
					t.Fatal("a tracer with tracing off")
				}
				if _, err := h.tracedDecide(ctx, 1, cmd); err != nil {
					t.Fatal(err)
				}
			})
			if n != 0 {
				t.Fatalf("tracing off: %v allocations per decision's spans, want 0", n)
			}
		})
	}
}
