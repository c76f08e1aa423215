package publish

import (
	"context"
	"errors"
	"fmt"

	"github.com/eventlite/eventlite/envelope"
)

// Publisher sends events to one destination. natsjs.Publisher, HTTP and Stdout
// implement it; every implementation passes one shared test suite
// (publishtest.RunPublisherSuite).
type Publisher interface {
	// Publish sends msgs' events, given in position order, and returns
	// one Result per message, in the same order. It keeps each stream's
	// order: events of one stream reach the destination in the order
	// given, and once an event of a stream fails before it was sent, the
	// stream's later events in the call are not sent (their Err is
	// ErrNotAttempted). When ctx ends, Publish returns at once; the
	// events it had not heard back about get ctx's error.
	//
	// A publisher whose transport has headers sends each message's
	// Headers (the relay's per-hop trace context) beside the event's own
	// attributes, and counts them in its size checks; one without (such
	// as Stdout) drops them.
	Publish(ctx context.Context, msgs []Message) []Result
	// Ping checks that the destination is up and answering, for a relay
	// that must tell a broken destination from a broken event.
	Ping(ctx context.Context) error
	// Close releases the publisher's connections.
	Close() error
}

// Message is one event a Publisher is asked to publish, and the per-hop
// headers its transport carries beside it.
type Message struct {
	Event envelope.Event
	// Headers are the per-hop trace context of this send: the context of
	// the relay's send span for the message, written by the relay's
	// propagator (W3C: lowercase "traceparent" and "tracestate"). They
	// travel beside the event's ce- attributes, whose ce-traceparent keeps
	// the event's origin. nil when tracing is off.
	Headers map[string]string
}

// Messages wraps events in messages without headers: for a caller of
// Publish with no trace context to pass (the relay passes its own).
func Messages(events ...envelope.Event) []Message {
	msgs := make([]Message, len(events))
	for i := range events {
		msgs[i].Event = events[i]
	}
	return msgs
}

// Result is the outcome of publishing one event.
type Result struct {
	// Err is nil when the destination accepted the event. Otherwise ClassOf
	// tells what to do about it.
	Err error
	// Sequence is the broker's sequence for the message (JetStream's
	// stream sequence), 0 when the destination has none.
	Sequence uint64
	// Duplicate: the broker already held a message with this id (an
	// earlier publish got through). It counts as delivered.
	Duplicate bool
}

// Class is what a failed publish means for the relay.
type Class int

const (
	// Transient: this event failed but may pass later (a timeout, 5xx,
	// 408, 429). The relay retries it with backoff, counting attempts up
	// to a bound, then dead-letters it.
	Transient Class = iota
	// Permanent: this event will never pass as it is (4xx, larger than the
	// broker takes, cannot be encoded). The relay dead-letters it at once.
	Permanent
	// Unreachable: the destination is down (connection refused, no
	// responders, disconnected). Not the event's fault: the relay backs
	// off and counts no attempt.
	Unreachable
	// Fatal: the destination is misconfigured (for example the JetStream
	// stream is missing). The relay stops and returns the error.
	Fatal
)

func (c Class) String() string {
	switch c {
	case Transient:
		return "transient"
	case Permanent:
		return "permanent"
	case Unreachable:
		return "unreachable"
	case Fatal:
		return "fatal"
	}
	return fmt.Sprintf("Class(%d)", int(c))
}

// Error is a publish error with its class.
type Error struct {
	Class Class
	Err   error
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// classed wraps err in an *Error of class c.
func classed(c Class, err error) error {
	if err == nil {
		return nil
	}
	return &Error{Class: c, Err: err}
}

// ErrNotAttempted is the Result of an event that was not sent because an
// earlier event of its stream in the same call failed first. It is not the
// event's failure: the relay counts nothing against it.
var ErrNotAttempted = errors.New("not sent: an earlier event of its stream failed")

// ClassOf tells the class of a publish error: the Class of an *Error in
// its chain, Unreachable for ErrNotAttempted (nothing to count against
// the event), Transient for anything else.
func ClassOf(err error) Class {
	var e *Error
	switch {
	case errors.As(err, &e):
		return e.Class
	case errors.Is(err, ErrNotAttempted):
		return Unreachable
	}
	return Transient
}

// streamKey identifies a stream across tenants.
type streamKey struct{ tenant, stream string }

func keyOf(e *envelope.Event) streamKey { return streamKey{e.Tenant, e.Stream} }
