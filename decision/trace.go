package decision

import (
	"cmp"
	"context"
	"reflect"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/eventlite/eventlite/internal/command"
	"github.com/eventlite/eventlite/internal/tracing"
	"github.com/eventlite/eventlite/store"
)

// Span attributes of the command, attempt, read and decide spans. Those
// aggregate.Handler sets too have the same names.
const (
	attrDecision = attribute.Key("eventlite.decision")
	attrCommand  = command.AttrCommand
	attrTenant   = tracing.AttrTenant
	attrReplayed = command.AttrReplayed
	attrPosition = attribute.Key("eventlite.position")
	attrAfter    = attribute.Key("eventlite.condition.after")
	attrRead     = attribute.Key("eventlite.read.events")
	attrDecided  = attribute.Key("eventlite.decided.events")
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
	tracer := h.opts.Trace.Tracer()
	if tracer == nil {
		return h.handle(ctx, cmd)
	}
	ctx, span := tracer.Start(ctx, "command", trace.WithAttributes(
		attrDecision.String(h.def.Name),
		attrCommand.String(command.TypeName(reflect.TypeFor[C]())),
		attrTenant.String(cmp.Or(cmd.Tenant, "default")),
	))
	defer span.End()
	res, err := h.handle(ctx, cmd)
	if err != nil {
		command.EndSpan(span, err)
		return res, err
	}
	span.SetAttributes(attrPosition.Int64(res.LastPosition()), attrReplayed.Bool(res.Replayed))
	return res, nil
}

// tracedFold is fold in a "read" span when tracing is on.
func (h *Handler[S, C]) tracedFold(ctx context.Context, tenant string, q store.Query, payload C) (S, int64, error) {
	var read int
	tracer := h.opts.Trace.Tracer()
	if tracer == nil {
		return h.fold(ctx, tenant, q, payload, &read)
	}
	ctx, span := tracer.Start(ctx, "read", trace.WithAttributes(attrTenant.String(tenant)))
	defer span.End()
	state, after, err := h.fold(ctx, tenant, q, payload, &read)
	span.SetAttributes(attrRead.Int(read), attrAfter.Int64(after))
	command.EndSpan(span, err)
	return state, after, err
}

// tracedDecide runs Decide in a "decide" span when tracing is on.
func (h *Handler[S, C]) tracedDecide(ctx context.Context, state S, cmd Command[C]) ([]Event, error) {
	tracer := h.opts.Trace.Tracer()
	if tracer == nil {
		return h.def.Decide(state, cmd)
	}
	_, span := tracer.Start(ctx, "decide")
	defer span.End()
	out, err := h.def.Decide(state, cmd)
	span.SetAttributes(attrDecided.Int(len(out)))
	command.EndSpan(span, err)
	return out, err
}
