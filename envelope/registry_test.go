package envelope_test

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/eventlite/eventlite/envelope"
)

type orderShipped struct {
	ID      string   `json:"id"`
	Parcels []string `json:"parcels"`
}

func newRegistry() *envelope.Registry {
	var r envelope.Registry // the zero value is ready to use
	envelope.Register[orderPlaced](&r, "order.placed")
	envelope.Register[orderShipped](&r, "order.shipped")
	envelope.Register[int](&r, "counter.set")
	return &r
}

func TestRegistryEncodeDecode(t *testing.T) {
	r := newRegistry()
	tests := []struct {
		name      string
		eventType string
		v         any
		want      any
	}{
		{"struct", "order.placed", orderPlaced{ID: "o-1", Total: 9.5}, orderPlaced{ID: "o-1", Total: 9.5}},
		{"pointer to struct", "order.placed", &orderPlaced{ID: "o-2"}, orderPlaced{ID: "o-2"}},
		{"slices", "order.shipped", orderShipped{ID: "o-3", Parcels: []string{"p1", "p2"}}, orderShipped{ID: "o-3", Parcels: []string{"p1", "p2"}}},
		{"scalar", "counter.set", 7, 7},
		{"unregistered", "audit.noted", map[string]int{"b": 2, "a": 1}, json.RawMessage(`{"a":1,"b":2}`)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := r.Encode(tt.eventType, tt.v)
			if err != nil {
				t.Fatal(err)
			}
			if e.Type != tt.eventType || e.DataContentType != "application/json" {
				t.Errorf("event type %q content type %q", e.Type, e.DataContentType)
			}
			// Through the wire and back, as a consumer would see it.
			e.Source = "/s"
			if err := e.Prepare(fixedTime, 0); err != nil {
				t.Fatal(err)
			}
			b, _ := e.MarshalJSON()
			e, err = envelope.DecodeJSON(b, 0)
			if err != nil {
				t.Fatal(err)
			}
			got, err := r.Decode(e)
			if err != nil {
				t.Fatal(err)
			}
			// Decode returns a T, not a *T.
			if reflect.TypeOf(got) != reflect.TypeOf(tt.want) {
				t.Errorf("Decode returned a %T, want a %T", got, tt.want)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Decode (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRegistryDecodeUnregisteredNonJSON(t *testing.T) {
	r := newRegistry()
	e := envelope.Event{Type: "blob", DataContentType: "application/octet-stream", Data: []byte{0, 1, 2}}
	got, err := r.Decode(e)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]byte{0, 1, 2}, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestRegistryEncodeWrongType(t *testing.T) {
	r := newRegistry()
	for _, v := range []any{orderShipped{}, "a string", nil, &orderShipped{}, []orderPlaced{}} {
		t.Run(fmt.Sprintf("%T", v), func(t *testing.T) {
			_, err := r.Encode("order.placed", v)
			checkField(t, err, "data")
		})
	}
}

// TestRegistryDecodeMalformed: bad data for a registered type is an
// *InvalidError naming the type, never a panic.
func TestRegistryDecodeMalformed(t *testing.T) {
	r := newRegistry()
	tests := []struct {
		name  string
		e     envelope.Event
		field string
	}{
		{"not JSON", envelope.Event{Type: "order.placed", Data: []byte("{oops")}, "data"},
		{"wrong field type", envelope.Event{Type: "order.placed", Data: []byte(`{"id":1}`)}, "data"},
		{"array for struct", envelope.Event{Type: "order.placed", Data: []byte(`[1,2]`)}, "data"},
		{"string for int", envelope.Event{Type: "counter.set", Data: []byte(`"7"`)}, "data"},
		{"empty data", envelope.Event{Type: "counter.set", Data: []byte{}}, "data"},
		{"nil data", envelope.Event{Type: "order.shipped"}, "data"},
		{"truncated", envelope.Event{Type: "order.shipped", Data: []byte(`{"id":"o","parcels":["a"`)}, "data"},
		{"not a JSON content type", envelope.Event{Type: "order.placed", DataContentType: "text/plain", Data: []byte(`{}`)}, "datacontenttype"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := r.Decode(tt.e)
			if got != nil {
				t.Errorf("Decode returned %#v with its error", got)
			}
			checkField(t, err, tt.field)
		})
	}
}

func TestRegisterTwice(t *testing.T) {
	var r envelope.Registry
	envelope.Register[orderPlaced](&r, "order.placed")
	envelope.Register[orderPlaced](&r, "order.placed") // same type: fine
	if got, ok := r.Lookup("order.placed"); !ok || got != reflect.TypeFor[orderPlaced]() {
		t.Errorf("Lookup = %v, %v", got, ok)
	}
	if _, ok := r.Lookup("order.unknown"); ok {
		t.Error("Lookup found an unregistered type")
	}
	defer func() {
		if recover() == nil {
			t.Error("registering another Go type for order.placed did not panic")
		}
	}()
	envelope.Register[orderShipped](&r, "order.placed")
}

func TestRegistryConcurrent(t *testing.T) {
	var r envelope.Registry
	e := envelope.Event{Type: "order.placed", Data: []byte(`{"id":"o","total":1}`)}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			envelope.Register[orderPlaced](&r, "order.placed")
			envelope.Register[int](&r, fmt.Sprintf("t%d", i))
			for range 50 {
				v, err := r.Decode(e)
				if err != nil {
					t.Error(err)
					return
				}
				if v != (orderPlaced{ID: "o", Total: 1}) {
					t.Errorf("got %#v", v)
					return
				}
			}
		})
	}
	wg.Wait()
}

func TestDecodeData(t *testing.T) {
	e, err := envelope.New("order.placed", orderPlaced{ID: "o-1", Total: 3})
	if err != nil {
		t.Fatal(err)
	}
	got, err := envelope.DecodeData[orderPlaced](e)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(orderPlaced{ID: "o-1", Total: 3}, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	m, err := envelope.DecodeData[map[string]any](e)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]any{"id": "o-1", "total": 3.0}, m); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}

	_, err = envelope.DecodeData[orderPlaced](envelope.Event{Type: "x", Data: []byte(`{"total":"many"}`)})
	checkField(t, err, "data")
	_, err = envelope.DecodeData[orderPlaced](envelope.Event{Type: "x", Data: []byte(`{`)})
	checkField(t, err, "data")
	_, err = envelope.DecodeData[orderPlaced](envelope.Event{Type: "x", DataContentType: "application/octet-stream", Data: []byte(`{}`)})
	checkField(t, err, "datacontenttype")
}
