package decision

import (
	"cmp"
	"context"
	"reflect"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/eventlite/eventlite/internal/tracing"
	"github.com/eventlite/eventlite/store"
)

// Span attributes of the command, attempt, read and decide spans. Those
// aggregate.Handler sets too have the same names.
const (
	attrDecision  = attribute.Key("eventlite.decision")
	attrCommand   = attribute.Key("eventlite.command")
	attrCommandID = attribute.Key("eventlite.command.id")
	attrTenant    = tracing.AttrTenant
	attrAttempt   = attribute.Key("eventlite.attempt")
	attrReplayed  = attribute.Key("eventlite.replayed")
	attrPosition  = attribute.Key("eventlite.position")
	attrAfter     = attribute.Key("eventlite.condition.after")
	attrRead      = attribute.Key("eventlite.read.events")
	attrDecided   = attribute.Key("eventlite.decided.events")
)

// Handle reads the events matching the command's query, folds them, runs
// Decide and appends the new events with the condition that no event
// matching the query was appended after the position read (the log's
// head, read before the events, or the newest matching event's when that
// is higher). When one was,
// it reads, folds and decides again, up to MaxAttempts, and never
// appends a stale decision; the last attempt's error then matches
// store.ErrConditionFailed. Decide's errors come back unchanged.
//
// A context that ends before the events commit makes Handle return an
// error that matches the context's, with nothing stored and nothing
// recorded in the ledger; once they committed, Handle reports them.
//
// Traced as a "command" span with one child "attempt" span per attempt;
// an attempt has a "read" child (the query's events and their fold), a
// "decide" child and the store's "append" spans. An attempt whose
// condition failed ends with status Error and the next attempt follows.
func (h *Handler[S, C]) Handle(ctx context.Context, cmd Command[C]) (Result, error) {
	tracer := h.trace.Tracer()
	if tracer == nil {
		return h.handle(ctx, cmd)
	}
	ctx, span := tracer.Start(ctx, "command", trace.WithAttributes(
		attrDecision.String(h.def.Name),
		attrCommand.String(typeName(reflect.TypeFor[C]())),
		attrTenant.String(cmp.Or(cmd.Tenant, "default")),
	))
	defer span.End()
	res, err := h.handle(ctx, cmd)
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
		return res, err
	}
	span.SetAttributes(attrPosition.Int64(res.LastPosition()), attrReplayed.Bool(res.Replayed))
	return res, nil
}

// tracedAttempt runs one attempt in its own span when tracing is on.
func (h *Handler[S, C]) tracedAttempt(ctx context.Context, cmd Command[C], op *store.Operation, n int) (Result, error) {
	tracer := h.trace.Tracer()
	if tracer == nil {
		return h.attempt(ctx, cmd, op)
	}
	ctx, span := tracer.Start(ctx, "attempt", trace.WithAttributes(attrAttempt.Int(n), attrCommandID.String(cmd.ID)))
	defer span.End()
	res, err := h.attempt(ctx, cmd, op)
	endSpan(span, err)
	return res, err
}

// tracedFold is fold in a "read" span when tracing is on.
func (h *Handler[S, C]) tracedFold(ctx context.Context, tenant string, q store.Query, payload C) (S, int64, error) {
	var read int
	tracer := h.trace.Tracer()
	if tracer == nil {
		return h.fold(ctx, tenant, q, payload, &read)
	}
	ctx, span := tracer.Start(ctx, "read", trace.WithAttributes(attrTenant.String(tenant)))
	defer span.End()
	state, after, err := h.fold(ctx, tenant, q, payload, &read)
	span.SetAttributes(attrRead.Int(read), attrAfter.Int64(after))
	endSpan(span, err)
	return state, after, err
}

// tracedDecide runs Decide in a "decide" span when tracing is on.
func (h *Handler[S, C]) tracedDecide(ctx context.Context, state S, cmd Command[C]) ([]Event, error) {
	tracer := h.trace.Tracer()
	if tracer == nil {
		return h.def.Decide(state, cmd)
	}
	_, span := tracer.Start(ctx, "decide")
	defer span.End()
	out, err := h.def.Decide(state, cmd)
	span.SetAttributes(attrDecided.Int(len(out)))
	endSpan(span, err)
	return out, err
}

// endSpan records err on span, if any.
func endSpan(span trace.Span, err error) {
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
}
