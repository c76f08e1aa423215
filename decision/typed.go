package decision

import (
	"errors"
	"fmt"
	"reflect"

	"github.com/eventlite/eventlite/envelope"
)

// EventOf is an event as a typed evolver receives it: the stored envelope
// (its tags, stream and position included) and its data decoded, after
// upcasting, into a T.
type EventOf[T any] struct {
	envelope.Event
	Payload T
}

// Evolvers are a decision's typed evolvers, one per Go event type (see
// On): how the events its query matches fold into its state. The zero
// value is ready to use; register every evolver before New.
type Evolvers[S any] struct {
	byGo map[reflect.Type]func(S, envelope.Event, any) S
	errs []error
}

// On registers fn as the evolver of the events whose data decodes, after
// upcasting, into a T. New refuses an evolver for a T the registry never
// decodes to, two evolvers for one T, and evolvers with none registered.
// An event that matches the query and has no evolver fails the decision
// (Handle returns a *DefinitionError and appends nothing): a query that
// matches more than the decision folds is a bug, not something to skip.
func On[S, T any](e *Evolvers[S], fn func(state S, ev EventOf[T]) S) {
	t := reflect.TypeFor[T]()
	if e.byGo == nil {
		e.byGo = make(map[reflect.Type]func(S, envelope.Event, any) S)
	}
	switch {
	case fn == nil:
		e.errs = append(e.errs, fmt.Errorf("decision.On[%v]: nil evolver", t))
		return
	case e.byGo[t] != nil:
		e.errs = append(e.errs, fmt.Errorf("decision.On[%v]: a second evolver for %v", t, t))
		return
	}
	e.byGo[t] = func(s S, ev envelope.Event, p any) S {
		return fn(s, EventOf[T]{Event: ev, Payload: p.(T)})
	}
}

// DefinitionError is a Definition that New refuses, or an event that
// the definition cannot fold: which field, and why.
type DefinitionError struct {
	Decision string
	Field    string
	Reason   string
}

func (e *DefinitionError) Error() string {
	return fmt.Sprintf("decision %s: Definition.%s: %s", e.Decision, e.Field, e.Reason)
}

// checkEvolvers checks the evolvers against reg.
func checkEvolvers[S any](name string, ev *Evolvers[S], reg *envelope.Registry) error {
	var errs []error
	for _, err := range ev.errs {
		errs = append(errs, &DefinitionError{name, "Evolvers", err.Error()})
	}
	if len(ev.byGo) == 0 && len(ev.errs) == 0 {
		errs = append(errs, &DefinitionError{name, "Evolvers", "no evolver: add one with decision.On for each event type the query matches"})
	}
	known := make(map[reflect.Type]bool)
	for _, t := range reg.Decoded() {
		known[t] = true
	}
	for t := range ev.byGo {
		if !known[t] {
			errs = append(errs, &DefinitionError{name, "Evolvers", fmt.Sprintf("the evolver for %v is never called: %v is not a registered event's type (register it with envelope.Register)", t, t)})
		}
	}
	return errors.Join(errs...)
}
