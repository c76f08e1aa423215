package envelope_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/eventlite/eventlite/envelope"
)

// Version 1 of order.placed had a total in cents; version 2 has an amount
// with a currency.
type placedV1 struct {
	Cents int `json:"cents"`
}

type placedV2 struct {
	Amount   float64 `json:"amount"`
	Currency string  `json:"currency"`
}

const placedV2Schema = "https://schemas.example.com/order-placed/v2"

func upcastRegistry() *envelope.Registry {
	var r envelope.Registry
	envelope.Register[placedV2](&r, "order.placed", envelope.Schema(placedV2Schema))
	envelope.RegisterUpcaster(&r, "order.placed", 1, func(e envelope.Event) (envelope.Event, error) {
		var old placedV1
		if err := json.Unmarshal(e.Data, &old); err != nil {
			return e, err
		}
		e.Data, _ = json.Marshal(placedV2{Amount: float64(old.Cents) / 100, Currency: "EUR"})
		e.DataSchema = placedV2Schema
		return e, nil
	})
	return &r
}

func TestUpcastOldEvent(t *testing.T) {
	r := upcastRegistry()
	old := envelope.Event{Type: "order.placed", DataContentType: "application/json", Data: []byte(`{"cents":1250}`)}
	before := old.Clone()
	got, err := r.Decode(old)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(placedV2{Amount: 12.5, Currency: "EUR"}, got); diff != "" {
		t.Errorf("upcast (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(before, old); diff != "" {
		t.Errorf("Decode changed the stored event (-before +after):\n%s", diff)
	}
	// The current shape decodes as is.
	cur, err := r.Encode("order.placed", placedV2{Amount: 3, Currency: "USD"})
	if err != nil {
		t.Fatal(err)
	}
	if cur.DataSchema != placedV2Schema || envelope.SchemaVersion(cur) != 2 {
		t.Errorf("encoded dataschema %q", cur.DataSchema)
	}
	if got, err := r.Decode(cur); err != nil || got != (placedV2{Amount: 3, Currency: "USD"}) {
		t.Errorf("decode current: %v %v", got, err)
	}
}

func TestUnknownSchemaVersion(t *testing.T) {
	var r envelope.Registry
	envelope.Register[placedV2](&r, "order.placed", envelope.Schema(placedV2Schema))
	// Version 1 has neither a Go type nor an upcaster: an error naming the
	// type and version, never a zero value.
	_, err := r.Decode(envelope.Event{Type: "order.placed", Data: []byte(`{"cents":1}`)})
	var ie *envelope.InvalidError
	if !errors.As(err, &ie) || ie.Field != "dataschema" {
		t.Fatalf("want an InvalidError on dataschema, got %v", err)
	}
	for _, want := range []string{`"order.placed"`, "version 1"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
	_, err = r.Decode(envelope.Event{Type: "order.placed", DataSchema: "https://schemas.example.com/order-placed/v3", Data: []byte(`{}`)})
	if !errors.Is(err, envelope.ErrInvalidEvent) || !strings.Contains(err.Error(), "version 3") {
		t.Errorf("future version: %v", err)
	}
}

func TestUpcasterMustAdvance(t *testing.T) {
	var r envelope.Registry
	envelope.Register[placedV2](&r, "order.placed", envelope.Schema(placedV2Schema))
	envelope.RegisterUpcaster(&r, "order.placed", 1, func(e envelope.Event) (envelope.Event, error) { return e, nil })
	if _, err := r.Decode(envelope.Event{Type: "order.placed", Data: []byte(`{}`)}); !errors.Is(err, envelope.ErrInvalidEvent) {
		t.Errorf("an upcaster that does not raise the version: %v", err)
	}
	envelope.RegisterUpcaster(&r, "a", 1, func(e envelope.Event) (envelope.Event, error) { e.Type = "b"; return e, nil })
	envelope.RegisterUpcaster(&r, "b", 1, func(e envelope.Event) (envelope.Event, error) { e.Type = "a"; return e, nil })
	if _, err := r.Decode(envelope.Event{Type: "a", Data: []byte(`{}`)}); !errors.Is(err, envelope.ErrInvalidEvent) {
		t.Errorf("a cycle of upcasters: %v", err)
	}
}

func TestTypeOf(t *testing.T) {
	var r envelope.Registry
	envelope.Register[placedV2](&r, "order.placed", envelope.Schema(placedV2Schema))
	envelope.Register[int](&r, "a")
	envelope.Register[int](&r, "b")
	if typ, ok := r.TypeOf(placedV2{}); !ok || typ != "order.placed" {
		t.Errorf("TypeOf(value) = %q, %v", typ, ok)
	}
	if typ, ok := r.TypeOf(&placedV2{}); !ok || typ != "order.placed" {
		t.Errorf("TypeOf(pointer) = %q, %v", typ, ok)
	}
	if _, ok := r.TypeOf(1); ok {
		t.Error("TypeOf of a Go type registered twice is ambiguous")
	}
	if _, ok := r.TypeOf(placedV1{}); ok {
		t.Error("TypeOf of an unregistered Go type")
	}
	if _, ok := r.TypeOf(nil); ok {
		t.Error("TypeOf(nil)")
	}
}

// TestDecoded: Decoded lists the Go types Decode can return, and leaves
// out a version an upcaster reads on from.
func TestDecoded(t *testing.T) {
	r := upcastRegistry()
	envelope.Register[placedV1](r, "order.placed") // version 1, upcast to 2: never decoded as such
	type shipped struct{}
	envelope.Register[shipped](r, "order.shipped")
	var got []string
	for _, typ := range r.Decoded() {
		got = append(got, typ.String())
	}
	want := []string{"envelope_test.placedV2", "envelope_test.shipped"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Decoded (-want +got):\n%s", diff)
	}
	var empty envelope.Registry
	if n := len(empty.Decoded()); n != 0 {
		t.Errorf("an empty registry decodes %d types", n)
	}
}
