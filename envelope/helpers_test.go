package envelope_test

import (
	"errors"
	"testing"

	"github.com/eventlite/eventlite/envelope"
)

// checkField asserts err is an *InvalidError (errors.Is ErrInvalidEvent)
// naming field.
func checkField(t *testing.T, err error, field string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want an invalid %s", field)
	}
	if !errors.Is(err, envelope.ErrInvalidEvent) {
		t.Errorf("errors.Is(%v, ErrInvalidEvent) = false", err)
	}
	var ie *envelope.InvalidError
	if !errors.As(err, &ie) {
		t.Fatalf("error %v (%T) is not an *InvalidError", err, err)
	}
	if ie.Field != field {
		t.Errorf("field %q, want %q (%v)", ie.Field, field, err)
	}
	if ie.Reason == "" {
		t.Errorf("empty reason: %+v", ie)
	}
}

// checkTooLarge asserts err is a *TooLargeError (errors.Is ErrTooLarge)
// with the given field, size and limit.
func checkTooLarge(t *testing.T, err error, field string, size, limit int) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want %s too large", field)
	}
	if !errors.Is(err, envelope.ErrTooLarge) {
		t.Errorf("errors.Is(%v, ErrTooLarge) = false", err)
	}
	if errors.Is(err, envelope.ErrInvalidEvent) {
		t.Errorf("a TooLargeError should not match ErrInvalidEvent: %v", err)
	}
	var te *envelope.TooLargeError
	if !errors.As(err, &te) {
		t.Fatalf("error %v (%T) is not a *TooLargeError", err, err)
	}
	if te.Field != field || te.Size != size || te.Limit != limit {
		t.Errorf("got field %q size %d limit %d, want %q %d %d", te.Field, te.Size, te.Limit, field, size, limit)
	}
}
