package serve

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"strconv"
	"unicode/utf8"

	"github.com/eventlite/eventlite/internal/jcs"
)

// Every JSON body that is not events (a truncate, a decision on an
// effect, a session's token) is read here, by one decoder with the rules
// of event JSON: one object, members split one by one so that a member
// given twice is refused (encoding/json's map and struct decoding keep
// the last), each member named and of its type (a string is not taken
// for a number), valid UTF-8 and I-JSON (an escaped lone surrogate is
// refused rather than turned into U+FFFD), nothing after the object.

// jsonKind is the JSON type a body member must have.
type jsonKind int

const (
	jsonString  jsonKind = iota // a JSON string
	jsonInteger                 // a JSON number that is a whole number of 64 bits, written without a fraction or exponent
)

func (k jsonKind) String() string {
	if k == jsonInteger {
		return "a whole number"
	}
	return "a string"
}

// bodyMember is one member a JSON body may hold.
type bodyMember struct {
	name     string
	kind     jsonKind
	required bool
}

// jsonBody is a decoded body: each given member's value, by name.
type jsonBody struct {
	strings  map[string]string
	integers map[string]int64
}

// has says whether the body gave member name.
func (b jsonBody) has(name string) bool {
	_, s := b.strings[name]
	_, i := b.integers[name]
	return s || i
}

// decodeJSONBody reads r's body: Content-Type application/json, at most
// limit bytes, one JSON object whose members are among members, none
// twice, each of its kind, the required ones present. want describes the
// body for a problem's detail ("{\"before\":N}"). Every refusal is a 400
// invalid-body naming the member (field) and why (reason), or a 413
// too-large, or a 415.
func decodeJSONBody(r *http.Request, limit int, want string, members ...bodyMember) (jsonBody, *Problem) {
	ct := r.Header.Get("Content-Type")
	if m, _, err := mime.ParseMediaType(ct); err != nil || m != ctJSON {
		p := problemf("unsupported-media-type", "Content-Type %q: send %s as %s", ct, want, ctJSON)
		p.Field = "Content-Type"
		return jsonBody{}, p
	}
	b, err := io.ReadAll(io.LimitReader(r.Body, int64(limit)+1))
	if err != nil {
		return jsonBody{}, invalidBody("", "", "reading the body: %v", err)
	}
	if len(b) > limit {
		p := problemf("too-large", "the body is over %d bytes: send %s", limit, want)
		p.Field, p.Limit = "body", ptr(int64(limit))
		return jsonBody{}, p
	}
	return parseJSONBody(b, want, members...)
}

// parseJSONBody is decodeJSONBody's parse of the body's bytes.
func parseJSONBody(b []byte, want string, members ...bodyMember) (jsonBody, *Problem) {
	if !utf8.Valid(b) {
		return jsonBody{}, invalidBody("", "not valid UTF-8", "the body is not valid UTF-8: send %s", want)
	}
	kinds := make(map[string]jsonKind, len(members))
	for _, m := range members {
		kinds[m.name] = m.kind
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return jsonBody{}, invalidBody("", "not a JSON object", "the body must be one JSON object: %s", want)
	}
	out := jsonBody{strings: map[string]string{}, integers: map[string]int64{}}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return jsonBody{}, invalidBody("", "malformed JSON", "the body is not valid JSON: %v", err)
		}
		name, _ := tok.(string)
		kind, ok := kinds[name]
		if !ok {
			return jsonBody{}, invalidBody(name, "unknown member", "unknown member %q: send %s", name, want)
		}
		if out.has(name) {
			return jsonBody{}, invalidBody(name, "given twice", "member %q given twice: send it once", name)
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return jsonBody{}, invalidBody(name, "malformed JSON", "the body is not valid JSON: %v", err)
		}
		wrong := func() (jsonBody, *Problem) {
			return jsonBody{}, invalidBody(name, "must be "+kind.String(), "member %q must be %s, not %s: send %s", name, kind, shorten(string(raw)), want)
		}
		switch kind {
		case jsonString:
			var v string
			if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &v) != nil {
				return wrong()
			}
			out.strings[name] = v
		case jsonInteger:
			if len(raw) == 0 || (raw[0] != '-' && (raw[0] < '0' || raw[0] > '9')) {
				return wrong()
			}
			n, err := strconv.ParseInt(string(raw), 10, 64)
			if err != nil {
				return wrong()
			}
			out.integers[name] = n
		}
	}
	if _, err := dec.Token(); err != nil {
		return jsonBody{}, invalidBody("", "malformed JSON", "the body is not valid JSON: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return jsonBody{}, invalidBody("", "data after the object", "the body must be one JSON object and nothing after it: %s", want)
	}
	// encoding/json turns an escaped lone surrogate into U+FFFD; refuse
	// it, as event JSON does.
	if _, err := jcs.Canonicalize(b); err != nil {
		return jsonBody{}, invalidBody("", "not I-JSON", "the body is not I-JSON (RFC 7493): %v", err)
	}
	for _, m := range members {
		if m.required && !out.has(m.name) {
			return jsonBody{}, invalidBody(m.name, "required", "member %q is required: send %s", m.name, want)
		}
	}
	return out, nil
}

func invalidBody(field, reason, format string, args ...any) *Problem {
	p := problemf("invalid-body", format, args...)
	p.Field, p.Reason = field, reason
	return p
}

// shorten shortens s for a problem's detail.
func shorten(s string) string {
	const max = 64
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}
