package scenario

import (
	"fmt"
	"reflect"
	"time"

	"github.com/eventlite/eventlite/envelope"
)

// Event is a given or an expected event with its place. Data is a value of
// a Go type registered with the scenario's envelope.Registry. A plain
// value given without Event goes to the scenario's default stream (the
// command's stream for an aggregate).
//
// As an expectation, an Event is compared on Tenant, Stream, type and
// Data; ID, CorrelationID, CausationID and Time are compared only when set
// (asked for). Positions and versions are never compared.
type Event struct {
	Tenant string // default: the scenario's tenant ("default")
	Stream string // default: the scenario's stream
	Data   any

	ID            string
	CorrelationID string
	CausationID   string
	Time          time.Time
}

// GivenSource is the CloudEvents source of the given events (a Stored
// event keeps its own when it has one).
const GivenSource = "/eventlite/scenario"

// On is an Event on stream, in the default tenant.
func On(stream string, data any) Event { return Event{Stream: stream, Data: data} }

// Stored is a given event in its stored form: an envelope.Event, for an
// event of an older schema version (its DataSchema ending in /v<N>) that
// the registry's upcasters bring forward as it is read. Its Tenant and
// Stream, when empty, default to the scenario's.
func Stored(e envelope.Event) Event {
	return Event{Tenant: e.Tenant, Stream: e.Stream, ID: e.ID, Data: storedForm{e}}
}

type storedForm struct{ e envelope.Event }

// asEvent turns a given or expected value into an Event in place.
func asEvent(v any, tenant, stream string) Event {
	var e Event
	switch x := v.(type) {
	case Event:
		e = x
	case *Event:
		e = *x
	case envelope.Event:
		e = Stored(x)
	default:
		e = Event{Data: v}
	}
	if e.Tenant == "" {
		e.Tenant = tenant
	}
	if e.Stream == "" {
		e.Stream = stream
	}
	return e
}

// envelopeOf encodes a given event through reg.
func envelopeOf(reg *envelope.Registry, e Event) (envelope.Event, error) {
	if sf, ok := e.Data.(storedForm); ok {
		ev := sf.e.Clone()
		ev.Position, ev.StreamVersion = 0, 0
		ev.Tenant, ev.Stream = "", ""
		if e.ID != "" {
			ev.ID = e.ID
		}
		if ev.Source == "" {
			ev.Source = GivenSource
		}
		return ev, nil
	}
	typ, ok := reg.TypeOf(e.Data)
	if !ok {
		return envelope.Event{}, fmt.Errorf("given %s: its Go type is not registered (envelope.Register) once in the scenario's registry", describe(e.Data))
	}
	ev, err := reg.Encode(typ, e.Data)
	if err != nil {
		return envelope.Event{}, fmt.Errorf("given %s: %w", describe(e.Data), err)
	}
	ev.ID, ev.Source = e.ID, GivenSource
	ev.CorrelationID, ev.CausationID = e.CorrelationID, e.CausationID
	if !e.Time.IsZero() {
		ev.Time = e.Time
	}
	return ev, nil
}

// describe prints a value with its Go type and field names.
func describe(v any) string {
	if v == nil {
		return "nil"
	}
	if sf, ok := v.(storedForm); ok {
		return fmt.Sprintf("stored %s %s", sf.e.Type, sf.e.Data)
	}
	t := reflect.TypeOf(v)
	s := fmt.Sprintf("%+v", v)
	if t.Kind() == reflect.Struct || t.Kind() == reflect.Pointer {
		return t.String() + s
	}
	return fmt.Sprintf("%s(%s)", t, s)
}
