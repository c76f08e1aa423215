package command

import (
	"fmt"
	"reflect"

	"github.com/eventlite/eventlite/envelope"
)

// Evolvers are typed evolvers: one F per Go event type, registered by a
// handler package's On. Registration problems are kept until the
// handler's New reports them.
type Evolvers[F any] struct {
	ByGo map[reflect.Type]F
	Errs []error
}

// Add registers f, the evolver of events whose data decodes into t; on
// (such as "aggregate.On") names the registering function in errors. A
// nil f (isNil) or a second evolver for t is kept as an error.
func (e *Evolvers[F]) Add(on string, t reflect.Type, f F, isNil bool) {
	if e.ByGo == nil {
		e.ByGo = make(map[reflect.Type]F)
	}
	if isNil {
		e.Errs = append(e.Errs, fmt.Errorf("%s[%v]: nil evolver", on, t))
		return
	}
	if _, ok := e.ByGo[t]; ok {
		e.Errs = append(e.Errs, fmt.Errorf("%s[%v]: a second evolver for %v", on, t, t))
		return
	}
	e.ByGo[t] = f
}

// Problems checks the evolvers against reg: the registration errors,
// then (with every, when each of reg's types needs an evolver; on names
// the function to add one with) the registered types without one, then
// the evolvers that are never called because reg never decodes to their
// type.
func (e *Evolvers[F]) Problems(reg *envelope.Registry, every bool, on string) []string {
	var out []string
	for _, err := range e.Errs {
		out = append(out, err.Error())
	}
	decoded := reg.Decoded()
	known := make(map[reflect.Type]bool, len(decoded))
	for _, t := range decoded {
		known[t] = true
		if _, ok := e.ByGo[t]; every && !ok {
			typ, _ := reg.TypeOf(reflect.New(t).Elem().Interface())
			out = append(out, fmt.Sprintf("event type %q (Go type %v) has no evolver: add %s for %v", typ, t, on, t))
		}
	}
	for t := range e.ByGo {
		if !known[t] {
			out = append(out, fmt.Sprintf("the evolver for %v is never called: %v is not a registered event's type (register it with envelope.Register)", t, t))
		}
	}
	return out
}
