package store

import (
	"context"
	"maps"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/internal/tracing"
)

// Span attributes eventlite sets beside the OpenTelemetry messaging
// conventions.
const (
	attrTenant        = tracing.AttrTenant
	attrStream        = tracing.AttrStream
	attrVersion       = tracing.AttrVersion
	attrFirstPosition = attribute.Key("eventlite.position.first")
	attrLastPosition  = attribute.Key("eventlite.position.last")
)

// LatencyObserver observes how long an operation took; ctx carries the
// operation's span, for an exemplar. Package metrics's Histograms is one.
// Operations: "append" (store), "publish" (a relay's round),
// "projection_batch" (a runner's batch).
type LatencyObserver interface {
	ObserveLatency(ctx context.Context, op string, d time.Duration)
}

// appendSpan is the span of one Append call; its zero value (tracing off,
// no span in the caller's context and no Options.Latency) costs nothing.
type appendSpan struct {
	span  trace.Span
	ctx   context.Context
	obs   LatencyObserver
	start time.Time
}

// startAppend begins an Append's tracing: it starts the append span
// (kind PRODUCER, messaging operation create) when a TracerProvider is
// set, and returns the events to append with the creation context stored
// as their traceparent/tracestate extension, in the W3C format. With
// tracing off, the origin is the span in ctx, if any. An event that
// carries either attribute already keeps both byte-exact; a value that is
// not a valid W3C context is stored unchanged and ignored for links (a
// debug log). The caller's events and their extension maps are not
// changed: stamped events get copies. With tracing off and no span in ctx
// it returns events as they are and does not allocate.
func (s *Store) startAppend(ctx context.Context, tenant, stream string, events []envelope.Event) (context.Context, appendSpan, []envelope.Event) {
	tracer := s.trace.Tracer()
	if tracer == nil && !trace.SpanContextFromContext(ctx).IsValid() {
		if s.opts.Latency != nil {
			return ctx, appendSpan{ctx: ctx, obs: s.opts.Latency, start: time.Now()}, events
		}
		return ctx, appendSpan{}, events
	}
	var links []trace.Link
	for i := range events {
		sc, present, ok := tracing.FromExtensions(events[i].Extensions)
		switch {
		case ok && len(links) < tracing.MaxLinks:
			links = append(links, trace.Link{SpanContext: sc})
		case present && !ok:
			s.log.Debug("event carries a traceparent that is not a valid W3C context: stored unchanged, not linked",
				"tenant", tenant, "stream", stream, "index", i, "traceparent", events[i].Extensions[tracing.ExtTraceParent])
		}
	}
	sp := appendSpan{obs: s.opts.Latency}
	if sp.obs != nil {
		sp.start = time.Now()
	}
	origin := trace.SpanContextFromContext(ctx)
	if tracer != nil {
		ctx, sp.span = tracer.Start(ctx, "append",
			trace.WithSpanKind(trace.SpanKindProducer),
			trace.WithLinks(links...),
			trace.WithAttributes(
				semconv.MessagingSystemKey.String("eventlite"),
				semconv.MessagingOperationTypeCreate,
				semconv.MessagingOperationName("append"),
				semconv.MessagingBatchMessageCount(len(events)),
				attrTenant.String(tenant),
				attrStream.String(stream),
			))
		origin = sp.span.SpanContext()
	}
	sp.ctx = ctx
	return ctx, sp, stampOrigin(events, origin)
}

// stampOrigin returns a copy of events in which every event that carries
// no traceparent or tracestate gets origin's, each in a copy of its
// extension map.
func stampOrigin(events []envelope.Event, origin trace.SpanContext) []envelope.Event {
	tp, ts := tracing.Format(origin)
	if tp == "" {
		return events
	}
	out := make([]envelope.Event, len(events))
	copy(out, events)
	for i := range out {
		ext := out[i].Extensions
		_, hasTP := ext[tracing.ExtTraceParent]
		_, hasTS := ext[tracing.ExtTraceState]
		if hasTP || hasTS {
			continue
		}
		m := make(map[string]any, len(ext)+2)
		maps.Copy(m, ext)
		m[tracing.ExtTraceParent] = tp
		if ts != "" {
			m[tracing.ExtTraceState] = ts
		}
		out[i].Extensions = m
	}
	return out
}

// end records the outcome and ends the span.
func (sp appendSpan) end(res AppendResult, err error) {
	if sp.obs != nil {
		sp.obs.ObserveLatency(sp.ctx, "append", time.Since(sp.start))
	}
	if sp.span == nil {
		return
	}
	if err != nil {
		sp.span.RecordError(err)
		sp.span.SetStatus(codes.Error, err.Error())
	} else {
		sp.span.SetAttributes(
			attrVersion.Int64(res.Version),
			attrFirstPosition.Int64(res.FirstPosition()),
			attrLastPosition.Int64(res.LastPosition()),
		)
	}
	sp.span.End()
}
