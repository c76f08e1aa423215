package tracing

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// Format writes exactly what otel's W3C propagator writes, and Parse
// reads it back.
func TestFormatMatchesW3CPropagator(t *testing.T) {
	ts, err := trace.ParseTraceState("rojo=00f067aa0ba902b7,congo=t61rcWkgMzE")
	if err != nil {
		t.Fatal(err)
	}
	for _, flags := range []trace.TraceFlags{0, trace.FlagsSampled, 0xff} {
		sc := trace.NewSpanContext(trace.SpanContextConfig{
			TraceID: trace.TraceID{0x0a, 0xf7, 0x65, 0x19, 0x16, 0xcd, 0x43, 0xdd, 0x84, 0x48, 0xeb, 0x21, 0x1c, 0x80, 0x31, 0x9c},
			SpanID:  trace.SpanID{0xb7, 0xad, 0x6b, 0x71, 0x69, 0x20, 0x33, 0x31}, TraceFlags: flags, TraceState: ts,
		})
		c := propagation.MapCarrier{}
		propagation.TraceContext{}.Inject(trace.ContextWithSpanContext(context.Background(), sc), c)
		tp, tst := Format(sc)
		if tp != c["traceparent"] || tst != c["tracestate"] {
			t.Errorf("flags %v: Format %q %q, propagator %q %q", flags, tp, tst, c["traceparent"], c["tracestate"])
		}
		if got := Parse(tp, tst); got.TraceID() != sc.TraceID() || got.SpanID() != sc.SpanID() || got.TraceState().String() != tst {
			t.Errorf("flags %v: Parse gave %v", flags, got)
		}
	}
	if tp, ts := Format(trace.SpanContext{}); tp != "" || ts != "" {
		t.Errorf("invalid context: %q %q", tp, ts)
	}
}
