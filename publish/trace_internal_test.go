package publish

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/trace/noop"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/internal/tracing"
)

// With no TracerProvider set, the relay's tracing adds no allocation per
// relayed message, even for events that carry a stored traceparent: no
// span starts and publishers find no per-hop headers.
func TestRelayTracingOffAllocatesNothing(t *testing.T) {
	msgs := make([]Message, 16)
	for i := range msgs {
		msgs[i].Event = envelope.Event{ID: "e", Source: "/s", Type: "t", Tenant: "default", Stream: "s",
			Extensions: map[string]any{"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}}
	}
	results := make([]Result, len(msgs))
	for name, cfg := range map[string]tracing.Config{
		"global default": {},
		"noop provider":  {TP: noop.NewTracerProvider()},
	} {
		t.Run(name, func(t *testing.T) {
			r := &Relay{trace: cfg}
			ctx := context.Background()
			n := testing.AllocsPerRun(100, func() {
				rd := r.startRound(ctx, msgs)
				for i := range msgs {
					if msgs[i].Headers != nil {
						t.Fatal("per-hop headers with tracing off")
					}
				}
				rd.end(results)
			})
			if n != 0 {
				t.Fatalf("%v allocations per round of %d messages, want 0", n, len(msgs))
			}
		})
	}
}
