// Package tracing holds what eventlite's packages share to trace through
// OpenTelemetry: resolving a TracerProvider and a propagator (otel's
// globals by default), telling when tracing is off so the hot paths cost
// nothing, and reading and writing the CloudEvents distributed-tracing
// extension (traceparent, tracestate) in the W3C TraceContext format,
// whatever propagator is configured.
//
// It knows no engine: spans are the same on a SQLite file and a PostgreSQL
// schema.
//
// It imports only the OpenTelemetry API.
package tracing

import (
	"context"
	"encoding/hex"
	"reflect"

	"github.com/hashicorp/go-hclog"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// ScopeName is the instrumentation scope of every eventlite span.
const ScopeName = "github.com/eventlite/eventlite"

// Span attributes that several packages set, named once so that a trace
// query over one works for all.
const (
	AttrTenant  = attribute.Key("eventlite.tenant")
	AttrStream  = attribute.Key("eventlite.stream")
	AttrVersion = attribute.Key("eventlite.stream.version")
)

// Names of the CloudEvents distributed-tracing extension attributes, which
// are also the per-hop W3C headers.
const (
	ExtTraceParent = "traceparent"
	ExtTraceState  = "tracestate"
)

// MaxLinks caps the links of a span that covers a batch.
const MaxLinks = 128

// globalPkg is the package of otel's default, delegating TracerProvider.
const globalPkg = "go.opentelemetry.io/otel/internal/global"

// Config is a component's tracing configuration: nil fields mean otel's
// globals, looked up at each use so that a provider set after the
// component was built takes effect.
type Config struct {
	TP   trace.TracerProvider
	Prop propagation.TextMapPropagator
}

// Tracer returns the tracer to start spans with, or nil when tracing is
// off: no provider was set (otel's global default that delegates to
// nothing, or a noop provider). It does not allocate when tracing is off.
func (c Config) Tracer() trace.Tracer {
	tp := c.TP
	if tp == nil {
		tp = otel.GetTracerProvider()
		if isUnsetGlobal(tp) {
			return nil
		}
	} else if off(tp) {
		return nil
	}
	return tp.Tracer(ScopeName)
}

// Propagator returns the configured propagator or otel's global one.
func (c Config) Propagator() propagation.TextMapPropagator {
	if c.Prop != nil {
		return c.Prop
	}
	return otel.GetTextMapPropagator()
}

func off(tp trace.TracerProvider) bool {
	switch tp.(type) {
	case noop.TracerProvider, *noop.TracerProvider:
		return true
	}
	if isUnsetGlobal(tp) {
		// otel's default provider passed explicitly: off until a delegate
		// is set, which makes otel.GetTracerProvider return another one.
		return otel.GetTracerProvider() == tp
	}
	return false
}

func isUnsetGlobal(tp trace.TracerProvider) bool {
	t := reflect.TypeOf(tp)
	return t.Kind() == reflect.Pointer && t.Elem().PkgPath() == globalPkg
}

// w3c is the format of the stored extension, whatever the propagator.
var w3c propagation.TraceContext

// extCarrier reads and writes the extension pair as a TextMapCarrier.
type extCarrier struct{ traceparent, tracestate string }

func (c *extCarrier) Get(key string) string {
	switch key {
	case ExtTraceParent:
		return c.traceparent
	case ExtTraceState:
		return c.tracestate
	}
	return ""
}

func (c *extCarrier) Set(key, value string) {
	switch key {
	case ExtTraceParent:
		c.traceparent = value
	case ExtTraceState:
		c.tracestate = value
	}
}

func (c *extCarrier) Keys() []string { return []string{ExtTraceParent, ExtTraceState} }

// Format writes sc as W3C traceparent and tracestate values. It returns
// empty strings for an invalid sc; tracestate is empty when sc has none.
func Format(sc trace.SpanContext) (traceparent, tracestate string) {
	if !sc.IsValid() {
		return "", ""
	}
	// version 00, as propagation.TraceContext writes it, without its
	// context and carrier.
	var b [55]byte
	tid, sid := sc.TraceID(), sc.SpanID()
	copy(b[:], "00-")
	hex.Encode(b[3:35], tid[:])
	b[35] = '-'
	hex.Encode(b[36:52], sid[:])
	b[52] = '-'
	hex.Encode(b[53:55], []byte{byte(sc.TraceFlags() & (trace.FlagsSampled | trace.FlagsRandom))})
	return string(b[:]), sc.TraceState().String()
}

// Parse reads W3C traceparent and tracestate values. It returns an
// invalid SpanContext when traceparent is not a valid W3C value; a
// tracestate that is not valid is dropped, as the W3C spec says.
func Parse(traceparent, tracestate string) trace.SpanContext {
	if traceparent == "" {
		return trace.SpanContext{}
	}
	c := extCarrier{traceparent: traceparent, tracestate: tracestate}
	sc := trace.SpanContextFromContext(w3c.Extract(context.Background(), &c))
	return sc.WithRemote(true)
}

// FromExtensions returns the stored origin of an event: its traceparent
// and tracestate extension values. present is false when the event
// carries neither; ok is false when the values are not a valid W3C
// context (or not strings), which callers ignore for parents and links.
func FromExtensions(ext map[string]any) (sc trace.SpanContext, present, ok bool) {
	tp, hasTP := ext[ExtTraceParent]
	ts, hasTS := ext[ExtTraceState]
	if !hasTP && !hasTS {
		return trace.SpanContext{}, false, false
	}
	tps, _ := tp.(string)
	tss, isStr := ts.(string)
	if hasTS && !isStr {
		return trace.SpanContext{}, true, false
	}
	sc = Parse(tps, tss)
	return sc, true, sc.IsValid()
}

// MapCarrier is a TextMapCarrier over a small map, for per-hop headers.
type MapCarrier = propagation.MapCarrier

// Inject writes sc's context through p into a new map of per-hop headers.
// It returns nil when p writes nothing.
func Inject(p propagation.TextMapPropagator, sc trace.SpanContext) map[string]string {
	c := propagation.MapCarrier{}
	p.Inject(trace.ContextWithSpanContext(context.Background(), sc), c)
	if len(c) == 0 {
		return nil
	}
	return c
}

// Logger returns log with the trace_id and span_id of the span in ctx,
// so that a log line leads to its trace; log itself when ctx has none.
func Logger(ctx context.Context, log hclog.Logger) hclog.Logger {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return log
	}
	return log.With("trace_id", sc.TraceID().String(), "span_id", sc.SpanID().String())
}
