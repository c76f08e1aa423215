package aggregate

import (
	"cmp"
	"context"
	"reflect"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/eventlite/eventlite/internal/command"
	"github.com/eventlite/eventlite/internal/tracing"
)

// Span attributes of the command and attempt spans.
const (
	attrAggregate = attribute.Key("eventlite.aggregate")
	attrCommand   = command.AttrCommand
	attrTenant    = tracing.AttrTenant
	attrStream    = tracing.AttrStream
	attrVersion   = tracing.AttrVersion
	attrReplayed  = command.AttrReplayed
)

// Handle loads the aggregate, runs Decide, and appends the new events with
// the loaded version as the expected one. On a version conflict it loads
// and decides again, up to MaxAttempts; a stale decision is never
// appended. A command whose Expected does not hold for the loaded version
// gets the *store.ConflictError at once. Decide's errors come back
// unchanged.
//
// Traced as a "command" span with one child "attempt" span per attempt
// (load, decide, append); the append span of the store is the attempt's
// child. An attempt that met a version conflict ends with status Error and
// the next attempt follows.
func (h *Handler[S]) Handle(ctx context.Context, cmd Command) (Result, error) {
	tracer := h.opts.Trace.Tracer()
	if tracer == nil {
		return h.handle(ctx, cmd)
	}
	ctx, span := tracer.Start(ctx, "command", trace.WithAttributes(
		attrAggregate.String(h.def.Name),
		attrCommand.String(command.TypeName(reflect.TypeOf(cmd.Payload))),
		attrTenant.String(cmp.Or(cmd.Tenant, "default")),
		attrStream.String(cmd.Stream),
	))
	defer span.End()
	res, err := h.handle(ctx, cmd)
	if err != nil {
		command.EndSpan(span, err)
		return res, err
	}
	span.SetAttributes(attrVersion.Int64(res.Version), attrReplayed.Bool(res.Replayed))
	return res, nil
}
