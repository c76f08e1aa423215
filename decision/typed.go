package decision

import (
	"errors"
	"fmt"
	"reflect"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/internal/command"
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
	set command.Evolvers[func(S, envelope.Event, any) S]
}

// On registers fn as the evolver of the events whose data decodes, after
// upcasting, into a T. New refuses an evolver for a T the registry never
// decodes to, two evolvers for one T, and evolvers with none registered.
// An event that matches the query and has no evolver fails the decision
// (Handle returns a *DefinitionError and appends nothing): a query that
// matches more than the decision folds is a bug, not something to skip.
func On[S, T any](e *Evolvers[S], fn func(state S, ev EventOf[T]) S) {
	e.set.Add("decision.On", reflect.TypeFor[T](), func(s S, ev envelope.Event, p any) S {
		return fn(s, EventOf[T]{Event: ev, Payload: p.(T)})
	}, fn == nil)
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
	if len(ev.set.ByGo) == 0 && len(ev.set.Errs) == 0 {
		errs = append(errs, &DefinitionError{name, "Evolvers", "no evolver: add one with decision.On for each event type the query matches"})
	}
	for _, p := range ev.set.Problems(reg, false, "decision.On") {
		errs = append(errs, &DefinitionError{name, "Evolvers", p})
	}
	return errors.Join(errs...)
}
