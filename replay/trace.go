package replay

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

const (
	attrProjection = attribute.Key("eventlite.projection")
	attrPhase      = attribute.Key("eventlite.replay.phase")
	attrDone       = attribute.Key("eventlite.replay.done")
	attrTotal      = attribute.Key("eventlite.replay.total")
	attrPosition   = attribute.Key("eventlite.replay.position")
	attrTarget     = attribute.Key("eventlite.replay.target")
	attrDryRun     = attribute.Key("eventlite.replay.dry_run")
)

// startSpan starts the rebuild's "rebuild" span, a trace of its own with
// no links to the traces of the events it replays. It returns ctx
// unchanged when tracing is off.
func (r *rebuilder) startSpan(ctx context.Context) context.Context {
	tracer := r.trace.Tracer()
	if tracer == nil {
		return ctx
	}
	ctx, r.span = tracer.Start(ctx, "rebuild", trace.WithNewRoot(), trace.WithAttributes(
		attrProjection.String(r.p.Name), attrDryRun.Bool(r.o.DryRun)))
	return ctx
}

// spanProgress records the progress as a span event.
func (r *rebuilder) spanProgress() {
	if r.span == nil {
		return
	}
	r.span.AddEvent("progress", trace.WithAttributes(
		attrPhase.String(string(r.phase)), attrDone.Int64(r.row.Applied), attrTotal.Int64(r.total),
		attrPosition.Int64(r.row.Checkpoint), attrTarget.Int64(r.target)))
}

func (r *rebuilder) endSpan(err error) {
	if r.span == nil {
		return
	}
	if err != nil {
		r.span.RecordError(err)
		r.span.SetStatus(codes.Error, err.Error())
	}
	r.span.End()
}
