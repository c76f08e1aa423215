package store

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/eventlite/eventlite/envelope"
)

// Callers cannot use the store's own type prefix; the store can.
func TestReservedTypePrefixBypass(t *testing.T) {
	s, err := Open(context.Background(), filepath.Join(t.TempDir(), "x.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	evs := []envelope.Event{{Source: "/s", Type: envelope.ReservedTypePrefix + "stream.created"}}
	var ie *envelope.InvalidError
	if _, err := s.prepareAppend("default", "s", Any, evs); !errors.As(err, &ie) || ie.Field != "type" || ie.Index != 0 {
		t.Fatalf("caller's reserved type: %v", err)
	}
	if _, err := s.prepareAppendAs(true, "default", "s", Any, evs); err != nil {
		t.Fatalf("the store's own event: %v", err)
	}
}
