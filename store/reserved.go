package store

import (
	"errors"
	"fmt"
	"strings"
)

// ReservedStreamPrefix begins the ids of the store's own streams (such
// as forgottenStream). Only the store writes them: a user's append,
// delete or truncate of one, and a retention policy whose prefix starts
// with it, are refused with *ReservedStreamError; a retention policy of
// a shorter prefix never trims them.
const ReservedStreamPrefix = "eventlite-"

// ErrReservedStream: a user's write to one of the store's own streams
// (see ReservedStreamPrefix). errors.Is(err, ErrInvalidEvent) holds too.
// Permanent: choose another stream id.
var ErrReservedStream = errors.New("the stream is the store's own")

// ReservedStreamError names the refused operation and stream.
// errors.Is(err, ErrReservedStream) and errors.Is(err, ErrInvalidEvent)
// hold for it.
type ReservedStreamError struct {
	Op     string // "append to", "delete", "truncate", "set a retention policy for"
	Tenant string // "" for a retention policy (every tenant)
	Stream string // the stream id, or the policy's prefix
}

func (e *ReservedStreamError) Error() string {
	what := fmt.Sprintf("stream %q", e.Stream)
	if e.Tenant != "" {
		what += fmt.Sprintf(" of tenant %q", e.Tenant)
	}
	if e.Op == opRetention {
		what = fmt.Sprintf("the prefix %q", e.Stream)
	}
	return fmt.Sprintf("%v: cannot %s %s: ids starting with %q are the store's own streams, which only the store writes: choose another stream id",
		ErrReservedStream, e.Op, what, ReservedStreamPrefix)
}

// Unwrap lets errors.Is match ErrReservedStream and ErrInvalidEvent.
func (e *ReservedStreamError) Unwrap() []error { return []error{ErrReservedStream, ErrInvalidEvent} }

const opRetention = "set a retention policy for"

// reservedStream reports whether stream is one of the store's own.
func reservedStream(stream string) bool { return strings.HasPrefix(stream, ReservedStreamPrefix) }

// userStream refuses op on one of the store's own streams.
func userStream(op, tenant, stream string) error {
	if reservedStream(stream) {
		return &ReservedStreamError{Op: op, Tenant: tenant, Stream: stream}
	}
	return nil
}
