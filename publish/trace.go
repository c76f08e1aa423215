package publish

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/internal/tracing"
	"github.com/eventlite/eventlite/store"
)

type hopKey struct{}

// HopHeaders returns the per-hop trace context headers of events[i] of a
// Publish call: the context of the relay's per-message send span, written
// by the relay's propagator (W3C: lowercase "traceparent" and
// "tracestate"). A Publisher adds them to the message beside the event's
// ce- attributes, and counts them in its size checks; the event's own
// ce-traceparent keeps its origin. It returns nil when tracing is off.
func HopHeaders(ctx context.Context, i int) map[string]string {
	h, _ := ctx.Value(hopKey{}).([]map[string]string)
	if i < 0 || i >= len(h) {
		return nil
	}
	return h[i]
}

// WithHopHeaders returns ctx carrying per-hop headers for a Publish call,
// one map per event (nil for none), as HopHeaders reads them. The relay
// sets them; tests and publishers of one's own may too.
func WithHopHeaders(ctx context.Context, h []map[string]string) context.Context {
	return context.WithValue(ctx, hopKey{}, h)
}

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
// the round's span when the event has no valid origin. It returns ctx
// carrying each message's per-hop headers.
func (r *Relay) startRound(ctx context.Context, events []envelope.Event) (context.Context, round) {
	tracer := r.trace.Tracer()
	if tracer == nil {
		if r.opts.Latency != nil {
			return ctx, round{ctx: ctx, obs: r.opts.Latency, start: time.Now()}
		}
		return ctx, round{}
	}
	prop := r.trace.Propagator()
	origins := make([]trace.SpanContext, len(events))
	var links []trace.Link
	for i := range events {
		sc, present, ok := tracing.FromExtensions(events[i].Extensions)
		switch {
		case ok:
			origins[i] = sc
			if len(links) < tracing.MaxLinks {
				links = append(links, trace.Link{SpanContext: sc})
			}
		case present:
			r.log.Debug("event carries a traceparent that is not a valid W3C context: published unchanged, not linked",
				"event", events[i].ID, "position", events[i].Position)
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
			semconv.MessagingBatchMessageCount(len(events)),
		))
	rd.span, rd.ctx = span, rctx
	if rd.obs = r.opts.Latency; rd.obs != nil {
		rd.start = time.Now()
	}
	rd.msgs = make([]trace.Span, len(events))
	hops := make([]map[string]string, len(events))
	for i := range events {
		e := &events[i]
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
		hops[i] = tracing.Inject(prop, ms.SpanContext())
	}
	return WithHopHeaders(ctx, hops), rd
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
