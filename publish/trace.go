package publish

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/eventlite/eventlite/internal/tracing"
	"github.com/eventlite/eventlite/store"
)

// Span attributes of the relay's spans.
const (
	attrTenant   = tracing.AttrTenant
	attrStream   = tracing.AttrStream
	attrPosition = attribute.Key("eventlite.position")
	attrSequence = attribute.Key("eventlite.broker.sequence")
	attrDup      = attribute.Key("eventlite.duplicate")
)

// round is the tracing of one Publish call; its zero value is tracing
// off, which costs nothing.
type round struct {
	span  trace.Span
	msgs  []trace.Span
	ctx   context.Context // with the round's span, for the latency's exemplar
	obs   store.LatencyObserver
	start time.Time
}

// startRound starts the round's send span (kind CLIENT, a trace of its
// own, linked to at most tracing.MaxLinks origins) and one send span per
// message (kind PRODUCER), parented on the event's stored origin, or on
// the round's span when the event has no valid origin, and sets each
// message's per-hop Headers. With tracing off it sets none and allocates
// nothing.
func (r *Relay) startRound(ctx context.Context, msgs []Message) round {
	tracer := r.trace.Tracer()
	if tracer == nil {
		if r.opts.Latency != nil {
			return round{ctx: ctx, obs: r.opts.Latency, start: time.Now()}
		}
		return round{}
	}
	prop := r.trace.Propagator()
	origins := make([]trace.SpanContext, len(msgs))
	var links []trace.Link
	for i := range msgs {
		sc, present, ok := tracing.FromExtensions(msgs[i].Event.Extensions)
		switch {
		case ok:
			origins[i] = sc
			if len(links) < tracing.MaxLinks {
				links = append(links, trace.Link{SpanContext: sc})
			}
		case present:
			r.log.Debug("event carries a traceparent that is not a valid W3C context: published unchanged, not linked",
				"event", msgs[i].Event.ID, "position", msgs[i].Event.Position)
		}
	}
	var rd round
	rctx, span := tracer.Start(ctx, "send",
		trace.WithNewRoot(),
		trace.WithSpanKind(trace.SpanKindClient),
		trace.WithLinks(links...),
		trace.WithAttributes(
			semconv.MessagingSystemKey.String("eventlite"),
			semconv.MessagingOperationTypeSend,
			semconv.MessagingOperationName("send"),
			semconv.MessagingBatchMessageCount(len(msgs)),
		))
	rd.span, rd.ctx = span, rctx
	if rd.obs = r.opts.Latency; rd.obs != nil {
		rd.start = time.Now()
	}
	rd.msgs = make([]trace.Span, len(msgs))
	for i := range msgs {
		e := &msgs[i].Event
		pctx := rctx
		if origins[i].IsValid() {
			pctx = trace.ContextWithRemoteSpanContext(ctx, origins[i])
		}
		_, ms := tracer.Start(pctx, "send",
			trace.WithSpanKind(trace.SpanKindProducer),
			trace.WithAttributes(
				semconv.MessagingSystemKey.String("eventlite"),
				semconv.MessagingOperationTypeSend,
				semconv.MessagingOperationName("send"),
				semconv.MessagingMessageID(e.ID),
				attrTenant.String(e.Tenant),
				attrStream.String(e.Stream),
				attrPosition.Int64(e.Position),
			))
		rd.msgs[i] = ms
		msgs[i].Headers = tracing.Inject(prop, ms.SpanContext())
	}
	return rd
}

// end records each message's result and ends the spans.
func (rd round) end(results []Result) {
	if rd.obs != nil {
		rd.obs.ObserveLatency(rd.ctx, "publish", time.Since(rd.start))
	}
	if rd.span == nil {
		return
	}
	failed := 0
	for i, ms := range rd.msgs {
		if i < len(results) {
			res := results[i]
			if res.Err != nil {
				failed++
				ms.RecordError(res.Err)
				ms.SetStatus(codes.Error, res.Err.Error())
			} else {
				ms.SetAttributes(attrSequence.Int64(int64(res.Sequence)), attrDup.Bool(res.Duplicate))
			}
		}
		ms.End()
	}
	if failed > 0 {
		rd.span.SetStatus(codes.Error, "some messages failed")
	}
	rd.span.End()
}
