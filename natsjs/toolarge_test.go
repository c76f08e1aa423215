package natsjs_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/natsjs"
	"github.com/eventlite/eventlite/store"
)

// TestTooLargeErrorIs checks that a publisher's too-large error is the
// store's: errors.Is(err, store.ErrTooLarge) holds, wrapped or not.
func TestTooLargeErrorIs(t *testing.T) {
	err := fmt.Errorf("natsjs: %w", &natsjs.TooLargeError{EventID: "e1", Size: 10, Limit: 5})
	if !errors.Is(err, store.ErrTooLarge) || !errors.Is(err, envelope.ErrTooLarge) {
		t.Errorf("errors.Is(%v, store.ErrTooLarge) = false", err)
	}
	var te *natsjs.TooLargeError
	if !errors.As(err, &te) || te.EventID != "e1" {
		t.Errorf("errors.As: %+v", te)
	}
}
