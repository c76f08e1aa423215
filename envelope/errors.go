package envelope

import (
	"errors"
	"fmt"
)

// ErrInvalidEvent is wrapped by every validation failure. It is permanent:
// retrying the same input fails the same way.
var ErrInvalidEvent = errors.New("invalid event")

// ErrTooLarge is wrapped by a *TooLargeError when an event's data is larger
// than the configured limit. It is permanent.
var ErrTooLarge = errors.New("event too large")

// InvalidError says which field of which event is wrong and why.
// errors.Is(err, ErrInvalidEvent) holds for it.
type InvalidError struct {
	// Index is the event's place in its batch (0-based), or -1 when the
	// error is not about one event of a batch.
	Index int
	// Field is the CloudEvents attribute ("id", "source", "subject", ...),
	// "data", "tenant" or "stream".
	Field  string
	Reason string
}

func (e *InvalidError) Error() string {
	if e.Index >= 0 {
		return fmt.Sprintf("invalid event %d: %s: %s", e.Index, e.Field, e.Reason)
	}
	return fmt.Sprintf("invalid event: %s: %s", e.Field, e.Reason)
}

// Unwrap lets errors.Is(err, ErrInvalidEvent) match.
func (e *InvalidError) Unwrap() error { return ErrInvalidEvent }

// TooLargeError reports an attribute or data larger than its limit.
// errors.Is(err, ErrTooLarge) holds for it.
type TooLargeError struct {
	Index int    // the event's place in its batch, or -1
	Field string // "data", or the attribute that is too long
	Size  int    // bytes, measured as stored
	Limit int    // bytes, inclusive
}

func (e *TooLargeError) Error() string {
	if e.Field == "stdin" {
		return fmt.Sprintf("stdin is over the limit of %d bytes: split the input into several appends", e.Limit)
	}
	prefix := "event"
	if e.Index >= 0 {
		prefix = fmt.Sprintf("event %d", e.Index)
	}
	return fmt.Sprintf("%s: %s is %d bytes, over the limit of %d bytes: store large content elsewhere and reference it from the event", prefix, e.Field, e.Size, e.Limit)
}

// Unwrap lets errors.Is(err, ErrTooLarge) match.
func (e *TooLargeError) Unwrap() error { return ErrTooLarge }

func invalid(field, format string, args ...any) *InvalidError {
	return &InvalidError{Index: -1, Field: field, Reason: fmt.Sprintf(format, args...)}
}

// withIndex sets the batch index on a validation error.
func withIndex(err error, i int) error {
	var ie *InvalidError
	if errors.As(err, &ie) {
		c := *ie
		c.Index = i
		return &c
	}
	var te *TooLargeError
	if errors.As(err, &te) {
		c := *te
		c.Index = i
		return &c
	}
	return err
}
