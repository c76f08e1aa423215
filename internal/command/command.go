// Package command holds what aggregate.Handler and decision.Handler
// share: a command's ids and defaults, the events it appends, the
// operation ledger that makes it idempotent (look up, record in the
// append's transaction, replay), the bounded retry of its attempts with
// their spans, and typed evolvers (one function per Go event type).
//
// The two handlers differ in their boundary only (a stream and its
// version; a query and a position): what they share is written here
// once, so that an idempotent retry, a cancelled attempt or an
// evolver's registration behaves the same in both.
package command

import (
	"context"
	"fmt"
	"reflect"

	"github.com/hashicorp/go-hclog"
	"github.com/oklog/ulid/v2"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/internal/tracing"
)

// Span attributes that both handlers set.
const (
	AttrCommand   = attribute.Key("eventlite.command")
	AttrCommandID = attribute.Key("eventlite.command.id")
	AttrAttempt   = attribute.Key("eventlite.attempt")
	AttrReplayed  = attribute.Key("eventlite.replayed")
)

// Options are a handler's options once defaulted.
type Options struct {
	// MaxAttempts bounds the attempts; 0 means 3.
	MaxAttempts int
	// Logger receives structured logs; nil means none.
	Logger hclog.Logger
	// Trace starts the spans.
	Trace tracing.Config
}

// Defaults fills in o's defaults and checks it; who names the handler
// in errors ("aggregate order", "decision register_user").
func (o *Options) Defaults(who string) error {
	if o.MaxAttempts < 0 {
		return fmt.Errorf("%s: MaxAttempts must not be negative", who)
	}
	if o.MaxAttempts == 0 {
		o.MaxAttempts = 3
	}
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
	return nil
}

// Source is the CloudEvents source of a handler's events: source when
// set, else the registry's, else "/eventlite/<name>".
func Source(source string, reg *envelope.Registry, name string) string {
	if source == "" {
		source = reg.Source()
	}
	if source == "" {
		source = "/eventlite/" + name
	}
	return source
}

// IDs fills in a command's defaults: tenant "default", the command id
// (the operation id when set, else a new ULID) and the correlation id
// (the command id). It checks the tenant.
func IDs(tenant *string, operationID string, id, correlationID *string) error {
	if *tenant == "" {
		*tenant = "default"
	}
	if err := envelope.ValidateTenant(*tenant); err != nil {
		return err
	}
	if *id == "" {
		*id = operationID
		if *id == "" {
			*id = ulid.Make().String()
		}
	}
	if *correlationID == "" {
		*correlationID = *id
	}
	return nil
}

// Meta is what every event a command appends takes from it.
type Meta struct {
	Source, CorrelationID, CausationID, ErasureKey string
}

// Encode makes the i-th event a Decide returned, p, into an envelope
// with m's attributes. who names the handler in the error for a p whose
// type is not registered.
func Encode(reg *envelope.Registry, who string, i int, p any, m Meta) (envelope.Event, error) {
	typ, ok := reg.TypeOf(p)
	if !ok {
		return envelope.Event{}, fmt.Errorf("%s: Decide returned %T (event %d), which is not registered: register it with envelope.Register", who, p, i)
	}
	e, err := reg.Encode(typ, p)
	if err != nil {
		return envelope.Event{}, err
	}
	e.Source = m.Source
	e.CorrelationID = m.CorrelationID
	e.CausationID = m.CausationID
	if m.ErasureKey != "" {
		e = e.WithErasureKey(m.ErasureKey)
	}
	return e, nil
}

// TypeName is the name of a command's Go type in operation types and
// spans: the type's name without pointers, its string when unnamed.
func TypeName(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Name() == "" {
		return t.String()
	}
	return t.Name()
}

// LastPosition is the last of positions, or 0 when there is none (what
// projection.WaitFor takes as nothing to wait for).
func LastPosition(positions []int64) int64 {
	if len(positions) == 0 {
		return 0
	}
	return positions[len(positions)-1]
}

// Attempts runs attempt up to o.MaxAttempts times while retry says its
// error is one to decide again on (the boundary moved), each in an
// "attempt" span when tracing is on (eventlite.attempt, and
// eventlite.command.id as id; an attempt that failed ends with status
// Error). It returns the first outcome not to retry; after the last
// attempt, its error and exhausted true. moved logs a retry.
func Attempts[R any](ctx context.Context, o *Options, id string, retry func(error) bool, moved func(ctx context.Context, n int, err error),
	attempt func(ctx context.Context) (R, error)) (res R, err error, exhausted bool) {
	for n := 1; n <= o.MaxAttempts; n++ {
		res, err = traced(ctx, o.Trace, n, id, attempt)
		if !retry(err) {
			return res, err, false
		}
		moved(ctx, n, err)
	}
	return res, err, true
}

// traced runs one attempt in its own span when tracing is on.
func traced[R any](ctx context.Context, tc tracing.Config, n int, id string, attempt func(ctx context.Context) (R, error)) (R, error) {
	tracer := tc.Tracer()
	if tracer == nil {
		return attempt(ctx)
	}
	ctx, span := tracer.Start(ctx, "attempt", trace.WithAttributes(AttrAttempt.Int(n), AttrCommandID.String(id)))
	defer span.End()
	res, err := attempt(ctx)
	EndSpan(span, err)
	return res, err
}

// EndSpan records err on span, if any: status Error with its message.
func EndSpan(span trace.Span, err error) {
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
}
