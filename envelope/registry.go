package envelope

import (
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"sync"
)

// Registry maps event types to the Go types of their data, so handlers
// work with structs instead of raw JSON, and turns old shapes of an event
// into the current one with upcasters. It is safe for concurrent use. The
// zero value is ready to use.
//
// An event's schema version is its dataschema attribute: a URI ending in
// /v<N> (".../order-placed/v2"). No dataschema, or one without that
// ending, is version 1. Stored events never change: upcasting happens as
// they are read.
type Registry struct {
	mu        sync.RWMutex
	types     map[string]*registered // by event type
	byGo      map[reflect.Type]goEntry
	upcasters map[schemaKey]Upcaster
	source    string // Encode's Event.Source (SetSource)
}

type registered struct {
	current  int // the newest registered schema version
	versions map[int]reflect.Type
	schemas  map[int]string // the dataschema URI of each version ("" for none)
}

type goEntry struct {
	eventType string
	version   int
	ambiguous bool // registered under more than one event type or version
}

type schemaKey struct {
	eventType string
	version   int
}

// Upcaster turns an event of one schema version into the next shape. It
// returns the event with its new data, and may change its type; it must
// set a dataschema whose version is higher, or change the type, so that
// upcasting ends.
type Upcaster func(Event) (Event, error)

// RegisterOption qualifies a registration.
type RegisterOption func(*registration)

type registration struct {
	schema  string
	version int
}

// Schema registers the Go type as the shape of the schema version that
// the URI ends in (".../order-placed/v2" is version 2). Events encoded
// with this type carry the URI as their dataschema.
func Schema(uri string) RegisterOption {
	return func(r *registration) {
		r.schema = uri
		r.version = schemaVersionOf(uri)
	}
}

var versionSuffix = regexp.MustCompile(`/v([0-9]{1,9})$`)

func schemaVersionOf(uri string) int {
	m := versionSuffix.FindStringSubmatch(uri)
	if m == nil {
		return 1
	}
	n, _ := strconv.Atoi(m[1])
	return max(n, 1)
}

// SchemaVersion returns e's schema version: the /v<N> that ends its
// dataschema, or 1.
func SchemaVersion(e Event) int { return schemaVersionOf(e.DataSchema) }

// Register binds eventType (at schema version 1, or the version of a
// Schema option) to the Go type T. Registering another T for the same
// event type and version panics: it is a programming error.
func Register[T any](r *Registry, eventType string, opts ...RegisterOption) {
	reg := registration{version: 1}
	for _, o := range opts {
		o(&reg)
	}
	if reg.schema != "" && !versionSuffix.MatchString(reg.schema) {
		panic(fmt.Sprintf("envelope: schema %q of %q does not end in /v<N>", reg.schema, eventType))
	}
	t := reflect.TypeFor[T]()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.types == nil {
		r.types = make(map[string]*registered)
		r.byGo = make(map[reflect.Type]goEntry)
	}
	ent := r.types[eventType]
	if ent == nil {
		ent = &registered{versions: make(map[int]reflect.Type), schemas: make(map[int]string)}
		r.types[eventType] = ent
	}
	if old, ok := ent.versions[reg.version]; ok && old != t {
		panic(fmt.Sprintf("envelope: event type %q version %d registered as %v and %v", eventType, reg.version, old, t))
	}
	ent.versions[reg.version] = t
	ent.schemas[reg.version] = reg.schema
	ent.current = max(ent.current, reg.version)
	g, seen := r.byGo[t]
	switch {
	case !seen:
		r.byGo[t] = goEntry{eventType: eventType, version: reg.version}
	case g.eventType != eventType || g.version != reg.version:
		g.ambiguous = true
		r.byGo[t] = g
	}
}

// RegisterUpcaster registers fn to turn events of eventType at schema
// version from into the next shape.
func RegisterUpcaster(r *Registry, eventType string, from int, fn Upcaster) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.upcasters == nil {
		r.upcasters = make(map[schemaKey]Upcaster)
	}
	r.upcasters[schemaKey{eventType, from}] = fn
}

// Lookup returns the Go type registered for eventType's newest version.
func (r *Registry) Lookup(eventType string) (reflect.Type, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	ent, ok := r.types[eventType]
	if !ok {
		return nil, false
	}
	return ent.versions[ent.current], true
}

// TypeOf returns the event type that v's Go type is registered for. It
// reports false when the Go type is not registered, or is registered under
// several event types or versions.
func (r *Registry) TypeOf(v any) (string, bool) {
	t := reflect.TypeOf(v)
	if t == nil {
		return "", false
	}
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	g, ok := r.byGo[t]
	if !ok || g.ambiguous {
		return "", false
	}
	return g.eventType, true
}

// Decoded returns the Go types Decode can return for registered event
// types: the type of each registered schema version that no upcaster
// reads on from, once each, ordered by event type and version. A
// component that needs a handler per Go type (aggregate.On) checks it
// has one for each.
func (r *Registry) Decoded() []reflect.Type {
	r.mu.RLock()
	defer r.mu.RUnlock()
	names := make([]string, 0, len(r.types))
	for name := range r.types {
		names = append(names, name)
	}
	slices.Sort(names)
	var out []reflect.Type
	for _, name := range names {
		ent := r.types[name]
		versions := make([]int, 0, len(ent.versions))
		for v := range ent.versions {
			versions = append(versions, v)
		}
		slices.Sort(versions)
		for _, v := range versions {
			if _, upcast := r.upcasters[schemaKey{name, v}]; upcast {
				continue
			}
			if t := ent.versions[v]; !slices.Contains(out, t) {
				out = append(out, t)
			}
		}
	}
	return out
}

// SetSource sets the source Encode gives the events it builds (Event.Source,
// CloudEvents "source": a URI-reference naming the producer, for example
// "/orders"), so that callers need not set it on each event; a caller may
// still change it on an event. Without it Encode leaves Source empty, and
// an append refuses the event, naming Event.Source: the store never fills
// one in.
func (r *Registry) SetSource(source string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.source = source
}

// Source returns the source SetSource set, or "".
func (r *Registry) Source() string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.source
}

// Encode returns an event of type eventType whose data is v encoded as
// JSON, with the registry's source (SetSource). When eventType is
// registered, v must be of the Go type registered for one of its
// versions, and the event carries that version's dataschema.
func (r *Registry) Encode(eventType string, v any) (Event, error) {
	r.mu.RLock()
	source := r.source
	ent, ok := r.types[eventType]
	schema := ""
	if ok {
		vt := reflect.TypeOf(v)
		if vt != nil && vt.Kind() == reflect.Pointer {
			vt = vt.Elem()
		}
		found := false
		for ver, t := range ent.versions {
			if t == vt {
				schema, found = ent.schemas[ver], true
				break
			}
		}
		if !found {
			r.mu.RUnlock()
			return Event{}, &InvalidError{Index: -1, Field: "data", Reason: fmt.Sprintf("event type %q takes %v, got %T", eventType, ent.versions[ent.current], v)}
		}
	}
	r.mu.RUnlock()
	e, err := New(eventType, v)
	e.DataSchema, e.Source = schema, source
	return e, err
}

// maxUpcasts bounds a chain of upcasters, so a cycle fails instead of
// looping.
const maxUpcasts = 64

// Upcast applies registered upcasters to e until none applies, and returns
// the event in its current shape. e itself is not changed.
func (r *Registry) Upcast(e Event) (Event, error) {
	for range maxUpcasts {
		key := schemaKey{e.Type, SchemaVersion(e)}
		r.mu.RLock()
		fn, ok := r.upcasters[key]
		r.mu.RUnlock()
		if !ok {
			return e, nil
		}
		next, err := fn(e.Clone())
		if err != nil {
			return e, &InvalidError{Index: -1, Field: "data", Reason: fmt.Sprintf("upcasting %q version %d: %v", key.eventType, key.version, err)}
		}
		if next.Type == key.eventType && SchemaVersion(next) <= key.version {
			return e, &InvalidError{Index: -1, Field: "dataschema", Reason: fmt.Sprintf("the upcaster of %q version %d did not raise the version", key.eventType, key.version)}
		}
		e = next
	}
	return e, &InvalidError{Index: -1, Field: "dataschema", Reason: fmt.Sprintf("more than %d upcasts of %q: the upcasters loop", maxUpcasts, e.Type)}
}

// Decode upcasts e to its current shape, then decodes its data into a new
// value of the Go type registered for its type and schema version, and
// returns it (a T, not a *T). An event type with no registration at all
// decodes to its raw JSON as json.RawMessage ([]byte for non-JSON data).
// A registered type at a schema version with neither an upcaster nor a
// registered Go type is an error naming both, never a silent zero value.
// Decode never panics on bad data: it returns an *InvalidError.
// An erased event (its subject was forgotten) returns an error matching
// ErrErased, an encrypted one read without the master key ErrEncrypted.
func (r *Registry) Decode(e Event) (any, error) {
	switch {
	case Erased(e):
		return nil, fmt.Errorf("%s event %s: %w", e.Type, e.ID, ErrErased)
	case Encrypted(e):
		return nil, fmt.Errorf("%s event %s: %w", e.Type, e.ID, ErrEncrypted)
	}
	e, err := r.Upcast(e)
	if err != nil {
		return nil, err
	}
	version := SchemaVersion(e)
	r.mu.RLock()
	ent, ok := r.types[e.Type]
	var t reflect.Type
	if ok {
		t = ent.versions[version]
	}
	r.mu.RUnlock()
	if !ok {
		if e.IsJSON() {
			return json.RawMessage(e.Data), nil
		}
		return e.Data, nil
	}
	if t == nil {
		return nil, &InvalidError{Index: -1, Field: "dataschema", Reason: fmt.Sprintf("event type %q schema version %d has no registered Go type and no upcaster: register one", e.Type, version)}
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
