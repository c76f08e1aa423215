package envelope

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sync"
)

// Registry maps event types to the Go types of their data, so handlers
// work with structs instead of raw JSON. It is safe for concurrent use.
// The zero value is ready to use.
type Registry struct {
	mu    sync.RWMutex
	types map[string]reflect.Type
}

// Register binds eventType to the Go type T. Registering a type twice
// with a different T panics: it is a programming error.
func Register[T any](r *Registry, eventType string) {
	t := reflect.TypeFor[T]()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.types == nil {
		r.types = make(map[string]reflect.Type)
	}
	if old, ok := r.types[eventType]; ok && old != t {
		panic(fmt.Sprintf("envelope: event type %q registered as %v and %v", eventType, old, t))
	}
	r.types[eventType] = t
}

// Lookup returns the Go type registered for eventType.
func (r *Registry) Lookup(eventType string) (reflect.Type, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	t, ok := r.types[eventType]
	return t, ok
}

// Encode returns an event of type eventType whose data is v encoded as
// JSON. When eventType is registered, v must be of the registered type.
func (r *Registry) Encode(eventType string, v any) (Event, error) {
	if t, ok := r.Lookup(eventType); ok {
		if vt := reflect.TypeOf(v); vt != t && !(vt != nil && vt.Kind() == reflect.Pointer && vt.Elem() == t) {
			return Event{}, &InvalidError{Index: -1, Field: "data", Reason: fmt.Sprintf("event type %q takes %v, got %T", eventType, t, v)}
		}
	}
	return New(eventType, v)
}

// Decode decodes e's data into a new value of the registered Go type and
// returns it (a T, not a *T). An unregistered type decodes to its raw
// JSON as json.RawMessage; non-JSON data of an unregistered type is
// returned as []byte. It never panics on bad data: it returns an
// *InvalidError naming the type.
func (r *Registry) Decode(e Event) (any, error) {
	t, ok := r.Lookup(e.Type)
	if !ok {
		if e.IsJSON() {
			return json.RawMessage(e.Data), nil
		}
		return e.Data, nil
	}
	if !e.IsJSON() {
		return nil, &InvalidError{Index: -1, Field: "datacontenttype", Reason: fmt.Sprintf("event type %q is registered as %v but its data is %s, not JSON", e.Type, t, e.DataContentType)}
	}
	p := reflect.New(t)
	if err := json.Unmarshal(e.Data, p.Interface()); err != nil {
		return nil, &InvalidError{Index: -1, Field: "data", Reason: fmt.Sprintf("cannot decode %q data as %v: %v", e.Type, t, err)}
	}
	return p.Elem().Interface(), nil
}

// DecodeData decodes e's JSON data into a T.
func DecodeData[T any](e Event) (T, error) {
	var v T
	if !e.IsJSON() {
		return v, &InvalidError{Index: -1, Field: "datacontenttype", Reason: fmt.Sprintf("data of %q is %s, not JSON", e.Type, e.DataContentType)}
	}
	if err := json.Unmarshal(e.Data, &v); err != nil {
		return v, &InvalidError{Index: -1, Field: "data", Reason: fmt.Sprintf("cannot decode %q data as %T: %v", e.Type, v, err)}
	}
	return v, nil
}
