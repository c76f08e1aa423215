package projection

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"time"

	"github.com/eventlite/eventlite/envelope"
)

// Handlers are a typed projection's handlers: one per Go event type,
// declared against an envelope.Registry (see On). The event types the
// projection reads are the ones its handlers' Go types are registered
// for. Set them as Projection.Handlers, instead of Types and Apply.
//
// Register every handler before the projection's runner starts: Handlers
// are not safe for concurrent registration.
type Handlers struct {
	reg    *envelope.Registry
	types  []string
	byGo   map[reflect.Type]typedHandler
	erased func(ctx context.Context, tx *Tx, e envelope.Event) error
}

type typedHandler func(ctx context.Context, tx *Tx, e envelope.Event, data any) error

// NewHandlers returns an empty set of handlers whose events decode
// through reg (upcasters included).
func NewHandlers(reg *envelope.Registry) *Handlers {
	return &Handlers{reg: reg, byGo: make(map[reflect.Type]typedHandler)}
}

// Event is an event as a typed handler receives it: its data decoded
// (after upcasting) into a T, and its metadata.
type Event[T any] struct {
	Data T
	// Tenant and Stream name the event's stream, Version is its version in
	// that stream, Position its place in the store's log.
	Tenant   string
	Stream   string
	Version  int64
	Position int64
	// Time is the event's time attribute.
	Time time.Time
	// ID, CorrelationID and CausationID are the event's ids.
	ID            string
	CorrelationID string
	CausationID   string
	// Type is the event's type as stored (an upcaster may have turned it
	// into the type T is registered for) and Source its source.
	Type   string
	Source string
}

// On registers fn as the handler of the events whose data decodes, after
// upcasting, into a T: the events of the type T is registered for with
// envelope.Register. fn writes the read model through tx, in the runner's
// transaction (tx.Table names the projection's tables). T not registered
// with the handlers' registry, registered under several event types or
// versions, or given a second handler, panics: a programming error, as in
// envelope.Register.
//
// An event whose data does not decode into its registered type is
// quarantined, with the data named as the cause (errors.Is(err,
// envelope.ErrInvalidEvent); ReasonUninterpretable), without
// retries; the projection then stops, or skips it with OnError Skip.
func On[T any](h *Handlers, fn func(ctx context.Context, tx *Tx, e Event[T]) error) {
	var zero T
	t := reflect.TypeFor[T]()
	if h == nil || h.reg == nil {
		panic(fmt.Sprintf("projection: On[%v]: handlers without a registry: make them with NewHandlers(reg)", t))
	}
	typ, ok := h.reg.TypeOf(zero)
	if !ok || t.Kind() == reflect.Pointer {
		panic(fmt.Sprintf("projection: On[%v]: %v is not registered under exactly one event type and version: register it with envelope.Register", t, t))
	}
	if _, dup := h.byGo[t]; dup {
		panic(fmt.Sprintf("projection: On[%v]: a handler for %v is already registered", t, t))
	}
	h.byGo[t] = func(ctx context.Context, tx *Tx, e envelope.Event, data any) error {
		return fn(ctx, tx, Event[T]{
			Data:   data.(T),
			Tenant: e.Tenant, Stream: e.Stream, Version: e.StreamVersion, Position: e.Position, Time: e.Time,
			ID: e.ID, CorrelationID: e.CorrelationID, CausationID: e.CausationID, Type: e.Type, Source: e.Source,
		})
	}
	if !slices.Contains(h.types, typ) {
		h.types = append(h.types, typ)
	}
}

// OnErased registers fn as the hook for erased events of the handlers'
// types: events whose subject was forgotten (see package store/erasure), read
// with their attributes and no data (envelope.Erased). Typed handlers are
// never called for them, and without a hook they are passed: nothing
// quarantines or stops on them. A projection that derived anything from
// a subject's events purges it on eventlite.subject.forgotten (register
// erasure.SubjectForgotten under erasure.TypeSubjectForgotten and handle it
// with On), so that a rebuild, which sees the events erased, equals the
// live read model.
func (h *Handlers) OnErased(fn func(ctx context.Context, tx *Tx, e envelope.Event) error) {
	h.erased = fn
}

// Types returns the event types the handlers read, in the order their
// handlers were registered.
func (h *Handlers) Types() []string { return slices.Clone(h.types) }

// apply decodes e and calls the handler of its Go type; an erased event
// goes to the erased hook, if any, instead. An event that
// decodes into a Go type with no handler (an old type listed in
// Projection.Types whose upcaster turns it into an unhandled one, say) is
// passed.
func (h *Handlers) apply(ctx context.Context, tx *Tx, e envelope.Event) error {
	if envelope.Erased(e) {
		if h.erased == nil {
			return nil
		}
		return h.erased(ctx, tx, e)
	}
	data, err := h.reg.Decode(e)
	if err != nil {
		return fmt.Errorf("the data of event %s (type %s, position %d) does not decode: %w", e.ID, e.Type, e.Position, err)
	}
	fn, ok := h.byGo[reflect.TypeOf(data)]
	if !ok {
		return nil
	}
	return fn(ctx, tx, e, data)
}
