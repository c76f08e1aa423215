package store

import (
	"context"
	"path/filepath"
	"testing"

	"go.opentelemetry.io/otel/trace/noop"

	"github.com/eventlite/eventlite/envelope"
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
