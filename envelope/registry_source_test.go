package envelope_test

import (
	"errors"
	"testing"

	"github.com/eventlite/eventlite/envelope"
)

// TestEventWithoutSource: an event without a source is refused with a
// message naming Event.Source and the registry's default; a registry
// with a source gives it to the events Encode builds.
func TestEventWithoutSource(t *testing.T) {
	type Placed struct {
		Total int `json:"total"`
	}
	var reg envelope.Registry
	envelope.Register[Placed](&reg, "order.placed")
	e, err := reg.Encode("order.placed", Placed{Total: 1})
	if err != nil {
		t.Fatal(err)
	}
	if e.Source != "" {
		t.Fatalf("no default: Source %q, want empty", e.Source)
	}
	e.ID = "01HZ0000000000000000000000" // the store gives one at append
	err = e.Validate(0)
	want := `invalid event: source: required and empty: set Event.Source to a URI-reference naming the producer (for example "/orders"), or give the Registry a default that Encode applies (Registry.SetSource)`
	if !errors.Is(err, envelope.ErrInvalidEvent) || err == nil || err.Error() != want {
		t.Errorf("no source:\n got %v\nwant %s", err, want)
	}
	reg.SetSource("/orders")
	if got := reg.Source(); got != "/orders" {
		t.Errorf("Source() = %q", got)
	}
	e, err = reg.Encode("order.placed", Placed{Total: 1})
	if err != nil {
		t.Fatal(err)
	}
	if e.Source != "/orders" {
		t.Errorf("Encode: Source %q, want the registry's /orders", e.Source)
	}
	e.ID = "01HZ0000000000000000000000"
	if err := e.Validate(0); err != nil {
		t.Errorf("with the registry's source: %v", err)
	}
}
