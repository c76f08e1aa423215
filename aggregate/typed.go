package aggregate

import (
	"errors"
	"fmt"
	"reflect"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/internal/command"
)

// EventOf is an event as a typed evolver receives it: the stored envelope
// and its data decoded (after upcasting) into a T.
type EventOf[T any] struct {
	envelope.Event
	Payload T
}

// CommandOf is a command as a typed decider receives it: the command, its
// payload as a C.
type CommandOf[C any] struct {
	Command
	// Payload is Command.Payload as a C.
	Payload C
}

// Evolvers are an aggregate's typed evolvers, one per Go event type (see
// On). Set them as Definition.Evolvers, instead of Evolve. The zero value
// is ready to use; register every evolver before New.
type Evolvers[S any] struct {
	set command.Evolvers[func(S, Event) S]
}

// On registers fn as the evolver of the events whose data decodes, after
// upcasting, into a T. New refuses a definition whose registry has an
// event type with no evolver, an evolver for a T the registry never
// decodes to, or two evolvers for one T. Erased events reach
// Definition.Erased, never an evolver.
func On[S, T any](e *Evolvers[S], fn func(state S, ev EventOf[T]) S) {
	e.set.Add("aggregate.On", reflect.TypeFor[T](), func(s S, ev Event) S {
		return fn(s, EventOf[T]{Event: ev.Event, Payload: ev.Payload.(T)})
	}, fn == nil)
}

// Deciders are an aggregate's typed deciders, one per Go command type (see
// OnCommand). Set them as Definition.Deciders, instead of Decide. The zero
// value is ready to use; register every decider before New.
type Deciders[S any] struct {
	byGo map[reflect.Type]func(S, Command) ([]any, error)
	out  map[reflect.Type]reflect.Type // command type -> event type E
	errs []error
}

// OnCommand registers fn as the decider of commands whose Payload is a C.
// fn returns the new events as Es: E is one registered event type, or an
// interface that the aggregate's event types implement. Handle refuses a
// command whose payload has no decider with an *envelope.InvalidError
// naming the payload, and appends nothing. New refuses a concrete E that
// is not registered, or two deciders for one C.
func OnCommand[S, C, E any](d *Deciders[S], fn func(state S, cmd CommandOf[C]) ([]E, error)) {
	c := reflect.TypeFor[C]()
	if d.byGo == nil {
		d.byGo = make(map[reflect.Type]func(S, Command) ([]any, error))
		d.out = make(map[reflect.Type]reflect.Type)
	}
	switch {
	case fn == nil:
		d.errs = append(d.errs, fmt.Errorf("aggregate.OnCommand[%v]: nil decider", c))
		return
	case d.byGo[c] != nil:
		d.errs = append(d.errs, fmt.Errorf("aggregate.OnCommand[%v]: a second decider for %v", c, c))
		return
	}
	d.out[c] = reflect.TypeFor[E]()
	d.byGo[c] = func(s S, cmd Command) ([]any, error) {
		events, err := fn(s, CommandOf[C]{Command: cmd, Payload: cmd.Payload.(C)})
		if err != nil || len(events) == 0 {
			return nil, err
		}
		out := make([]any, len(events))
		for i, e := range events {
			out[i] = e
		}
		return out, nil
	}
}

// DefinitionError is a Definition that New refuses: which field, and why.
type DefinitionError struct {
	Aggregate string
	Field     string
	Reason    string
}

func (e *DefinitionError) Error() string {
	return fmt.Sprintf("aggregate %s: Definition.%s: %s", e.Aggregate, e.Field, e.Reason)
}

// typedEvolve checks the evolvers against reg and returns the Evolve they
// make.
func typedEvolve[S any](name string, ev *Evolvers[S], reg *envelope.Registry) (func(S, Event) S, error) {
	var errs []error
	for _, p := range ev.set.Problems(reg, true, "aggregate.On") {
		errs = append(errs, &DefinitionError{name, "Evolvers", p})
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	byGo := ev.set.ByGo
	return func(s S, e Event) S {
		if fn := byGo[reflect.TypeOf(e.Payload)]; fn != nil {
			return fn(s, e)
		}
		return s // an unregistered event type's raw data: no evolver can take it
	}, nil
}

// typedDecide checks the deciders against reg and returns the Decide they
// make.
func typedDecide[S any](name string, d *Deciders[S], reg *envelope.Registry) (func(S, Command) ([]any, error), error) {
	var errs []error
	for _, err := range d.errs {
		errs = append(errs, &DefinitionError{name, "Deciders", err.Error()})
	}
	if len(d.byGo) == 0 {
		errs = append(errs, &DefinitionError{name, "Deciders", "no decider: add one with aggregate.OnCommand"})
	}
	for c, e := range d.out {
		if e.Kind() == reflect.Interface {
			continue
		}
		if _, ok := reg.TypeOf(reflect.New(e).Elem().Interface()); !ok {
			errs = append(errs, &DefinitionError{name, "Deciders", fmt.Sprintf("the decider for %v returns %v, which is not registered under exactly one event type and version: register it with envelope.Register", c, e)})
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	byGo := d.byGo
	return func(s S, cmd Command) ([]any, error) {
		fn := byGo[reflect.TypeOf(cmd.Payload)]
		if fn == nil {
			return nil, &envelope.InvalidError{Index: -1, Field: "payload", Reason: fmt.Sprintf("aggregate %s has no decider for %T: add one with aggregate.OnCommand", name, cmd.Payload)}
		}
		return fn(s, cmd)
	}, nil
}
