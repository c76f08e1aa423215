package publish

import (
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/cloudevents/sdk-go/v2/types"

	"github.com/eventlite/eventlite/envelope"
)

// EncodeError: an event holds a value that a destination cannot carry
// exactly, such as a control character in an HTTP header, or invalid
// UTF-8 in JSON. Only events stored before eventlite refused such values
// hold them. It is Permanent: the relay dead-letters the event at its
// first attempt.
type EncodeError struct {
	EventID     string
	Destination string // "NATS", "HTTP binary mode", "JSON"
	Attribute   string // the attribute's name, such as "type" or an extension's
	Reason      string
}

func (e *EncodeError) Error() string {
	hint := ""
	if e.Destination == destHTTPBinary {
		hint = "relay it in structured mode (--mode structured), or "
	}
	return fmt.Sprintf("event %s cannot be encoded for %s: attribute %s %s: %sdiscard it with eventlite dlq discard %s (its stream then resumes)",
		e.EventID, e.Destination, e.Attribute, e.Reason, hint, e.EventID)
}

const (
	destHTTPBinary = "HTTP binary mode"
	destJSON       = "JSON"
)

// eachString calls f with every string attribute of e that an encoding
// writes as given: the core attributes, eventlite's extensions and the
// others (formatted as CloudEvents strings). It stops at f's first error.
func eachString(e *envelope.Event, f func(name, v string) error) error {
	for _, a := range [...]struct{ name, v string }{
		{"id", e.ID}, {"source", e.Source}, {"type", e.Type}, {"subject", e.Stream},
		{"datacontenttype", e.DataContentType}, {"dataschema", e.DataSchema},
		{envelope.ExtTenant, e.Tenant}, {envelope.ExtCorrelationID, e.CorrelationID},
		{envelope.ExtCausationID, e.CausationID}, {envelope.ExtTags, envelope.EncodeTags(e.Tags)},
	} {
		if err := f(a.name, a.v); err != nil {
			return err
		}
	}
	for k, v := range e.Extensions {
		s, err := types.Format(v)
		if err != nil {
			return &EncodeError{EventID: e.ID, Destination: "CloudEvents", Attribute: k, Reason: "cannot be formatted: " + err.Error()}
		}
		if err := f(k, s); err != nil {
			return err
		}
	}
	return nil
}

// checkHTTPHeaders tells whether HTTP headers carry every attribute of e
// exactly: Go's client refuses a control character other than tab in a
// header value, and receivers trim white space at either end.
func checkHTTPHeaders(e *envelope.Event) error {
	return eachString(e, func(name, v string) error {
		for i := 0; i < len(v); i++ {
			if c := v[i]; c < ' ' && c != '\t' || c == 0x7f {
				return &EncodeError{EventID: e.ID, Destination: destHTTPBinary, Attribute: name,
					Reason: fmt.Sprintf("holds the control character %s, which an HTTP header cannot carry", strconv.QuoteRune(rune(c)))}
			}
		}
		if v != "" && (isLWS(v[0]) || isLWS(v[len(v)-1])) {
			return &EncodeError{EventID: e.ID, Destination: destHTTPBinary, Attribute: name,
				Reason: fmt.Sprintf("%q starts or ends with white space, which HTTP receivers trim", truncate(v))}
		}
		return nil
	})
}

func isLWS(c byte) bool { return c == ' ' || c == '\t' }

// checkJSONStrings tells whether JSON carries every attribute of e
// exactly: a JSON string is Unicode text, so invalid UTF-8 would arrive
// as U+FFFD.
func checkJSONStrings(e *envelope.Event) error {
	return eachString(e, func(name, v string) error {
		if !utf8.ValidString(v) {
			return &EncodeError{EventID: e.ID, Destination: destJSON, Attribute: name,
				Reason: "is not valid UTF-8, which a JSON string cannot carry (it would arrive as U+FFFD)"}
		}
		return nil
	})
}

func truncate(s string) string {
	if len(s) > 60 {
		return s[:60] + "..."
	}
	return s
}
