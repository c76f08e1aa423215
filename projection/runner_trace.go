package projection

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/internal/tracing"
	"github.com/eventlite/eventlite/store"
)

const (
	attrProjection = attribute.Key("eventlite.projection")
	attrFrom       = attribute.Key("eventlite.checkpoint.from")
	attrTo         = attribute.Key("eventlite.checkpoint.to")
	attrMoved      = attribute.Key("eventlite.checkpoint.moved")
)

// batchTrace carries a batch's span from tracedBatch, which ends it, to
// the point in batch where the events are known and it starts.
type batchTrace struct {
	tracer  trace.Tracer // nil when only the latency is observed
	span    trace.Span
	started bool
	start   time.Time
}

type batchTraceKey struct{}

// tracedBatch runs one batch; with tracing on, a batch that has events to
// apply (or a checkpoint to move) gets a span of its own (see
// startBatchSpan). An idle pass at the head records nothing.
func (r *Runner) tracedBatch(ctx context.Context, lease store.Lease) (int64, error) {
	tracer := r.trace.Tracer()
	if tracer == nil && r.opts.Latency == nil {
		return r.batch(ctx, lease)
	}
	bt := &batchTrace{tracer: tracer}
	n, err := r.batch(context.WithValue(ctx, batchTraceKey{}, bt), lease)
	if bt.started && r.opts.Latency != nil {
		sctx := ctx
		if bt.span != nil {
			sctx = trace.ContextWithSpan(ctx, bt.span)
		}
		r.opts.Latency.ObserveLatency(sctx, "projection_batch", time.Since(bt.start))
	}
	if bt.span != nil {
		bt.span.SetAttributes(attrMoved.Int64(n))
		if err != nil {
			bt.span.RecordError(err)
			var stopped *StoppedError
			if errors.As(err, &stopped) {
				bt.span.SetStatus(codes.Error, "projection stopped on a quarantined event")
			} else {
				bt.span.SetStatus(codes.Error, err.Error())
			}
		}
		bt.span.End()
	}
	return n, err
}

// startBatchSpan starts the batch's "process" span (kind CONSUMER), in a
// trace of its own, linked to at most tracing.MaxLinks of the events'
// stored origins. It returns ctx unchanged when tracing is off.
func (r *Runner) startBatchSpan(ctx context.Context, cp, next int64, events []envelope.Event) context.Context {
	bt, _ := ctx.Value(batchTraceKey{}).(*batchTrace)
	if bt == nil {
		return ctx
	}
	bt.started, bt.start = true, time.Now()
	if bt.tracer == nil {
		return ctx
	}
	var links []trace.Link
	for i := range events {
		if len(links) == tracing.MaxLinks {
			break
		}
		if sc, _, ok := tracing.FromExtensions(events[i].Extensions); ok {
			links = append(links, trace.Link{SpanContext: sc})
		}
	}
	ctx, bt.span = bt.tracer.Start(ctx, "process",
		trace.WithNewRoot(),
		trace.WithSpanKind(trace.SpanKindConsumer),
		trace.WithLinks(links...),
		trace.WithAttributes(
			semconv.MessagingSystemKey.String("eventlite"),
			semconv.MessagingOperationTypeProcess,
			semconv.MessagingOperationName("process"),
			semconv.MessagingBatchMessageCount(len(events)),
			attrProjection.String(r.p.Name),
			attrFrom.Int64(cp),
			attrTo.Int64(next),
		))
	return ctx
}
