package projection

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/internal/tracing"
)

// Span attributes of the consumer's and the runner's spans.
const (
	attrTenant   = tracing.AttrTenant
	attrStream   = tracing.AttrStream
	attrVersion  = tracing.AttrVersion
	attrDecision = attribute.Key("eventlite.inbox.decision")
	attrDrained  = attribute.Key("eventlite.inbox.released")
	attrReason   = attribute.Key("eventlite.quarantine.reason")
)

// Handle takes one delivered event. It commits its decision (and the read
// model's writes) in one transaction before it returns: acknowledge the
// message only after Handle returned nil. An error means nothing changed
// and the message should come again later.
//
// Traced as one "process" span (kind CONSUMER) parented on the span
// context in ctx, which a transport loop extracts from the message's
// per-hop headers (Extract), or else on the event's stored origin (its
// traceparent), and linked to that origin. The span records the inbox
// decision (applied, duplicate, stale, deferred, conflict, quarantined)
// and how many deferred successors it released; its status is Error only
// for a quarantine or a failure of the handler.
func (c *Consumer) Handle(ctx context.Context, e envelope.Event) (HandleResult, error) {
	tracer := c.trace.Tracer()
	if tracer == nil {
		return c.handle(ctx, e)
	}
	ctx, span := c.startProcess(ctx, tracer, e)
	defer span.End()
	res, err := c.handle(ctx, e)
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
		return res, err
	}
	span.SetAttributes(attrDecision.String(res.Outcome.String()), attrDrained.Int(res.Drained))
	if res.Outcome == Quarantined {
		span.SetStatus(codes.Error, "quarantined")
	}
	return res, nil
}

// Extract returns ctx carrying the per-hop trace context that the
// consumer's propagator reads from a message's headers, for Handle to
// parent its span on. With tracing off it returns ctx unchanged.
func (c *Consumer) Extract(ctx context.Context, headers propagation.TextMapCarrier) context.Context {
	if c.trace.Tracer() == nil {
		return ctx
	}
	return c.trace.Propagator().Extract(ctx, headers)
}

func (c *Consumer) startProcess(ctx context.Context, tracer trace.Tracer, e envelope.Event) (context.Context, trace.Span) {
	origin, present, ok := tracing.FromExtensions(e.Extensions)
	if present && !ok {
		c.log.Debug("event carries a traceparent that is not a valid W3C context: not linked", "id", e.ID)
	}
	opts := []trace.SpanStartOption{
		trace.WithSpanKind(trace.SpanKindConsumer),
		trace.WithAttributes(
			semconv.MessagingSystemKey.String("eventlite"),
			semconv.MessagingOperationTypeProcess,
			semconv.MessagingOperationName("process"),
			semconv.MessagingConsumerGroupName(c.opts.Name),
			semconv.MessagingMessageID(e.ID),
			attrTenant.String(tenantOf(e)),
			attrStream.String(e.Stream),
			attrVersion.Int64(e.StreamVersion),
		),
	}
	if ok {
		opts = append(opts, trace.WithLinks(trace.Link{SpanContext: origin}))
		if !trace.SpanContextFromContext(ctx).IsValid() {
			ctx = trace.ContextWithRemoteSpanContext(ctx, origin)
		}
	}
	return tracer.Start(ctx, "process", opts...)
}

// quarantineSpan traces a message the transport loop sets aside (it does
// not decode, or failed too often): a "process" span with status Error.
func (c *Consumer) quarantineSpan(ctx context.Context, reason QuarantineReason, id string) (context.Context, trace.Span) {
	tracer := c.trace.Tracer()
	if tracer == nil {
		return ctx, nil
	}
	ctx, span := tracer.Start(ctx, "process", trace.WithSpanKind(trace.SpanKindConsumer), trace.WithAttributes(
		semconv.MessagingSystemKey.String("eventlite"),
		semconv.MessagingOperationTypeProcess,
		semconv.MessagingOperationName("process"),
		semconv.MessagingConsumerGroupName(c.opts.Name),
		semconv.MessagingMessageID(id),
		attrDecision.String(Quarantined.String()),
		attrReason.String(string(reason)),
	))
	span.SetStatus(codes.Error, "quarantined: "+string(reason))
	return ctx, span
}

// spanReleased records on the process span an event it released from
// deferral and applied.
func spanReleased(ctx context.Context, e envelope.Event) {
	if span := trace.SpanFromContext(ctx); span.IsRecording() {
		span.AddEvent("released from deferral", trace.WithAttributes(
			semconv.MessagingMessageID(e.ID), attrVersion.Int64(e.StreamVersion)))
	}
}
