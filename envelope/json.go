package envelope

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// DecodeJSON decodes one event in the CloudEvents structured JSON format
// and validates it (maxData as in Validate). Optional attributes that are
// null are treated as absent; JSON data is kept compacted. It refuses two
// members of the same name, invalid UTF-8 and escaped lone surrogates
// (\ud800) in attributes and data, and data nested deeper than
// MaxDataDepth.
func DecodeJSON(b []byte, maxData int) (Event, error) {
	raw, err := splitObject(b)
	if err != nil {
		var se *syntaxError
		if errors.As(err, &se) {
			return Event{}, invalid("event", "%s", se.msg)
		}
		return Event{}, err
	}
	return decodeObject(raw, maxData)
}

// DecodeStoredJSON decodes an event that eventlite itself encoded with
// MarshalJSON and stored, such as a consumer's deferred event. It does not
// apply input validation again, which may have grown stricter since the
// event was stored: the event is taken as it was accepted then, its JSON
// data as written. Use DecodeJSON for anything that comes from outside.
func DecodeStoredJSON(b []byte) (Event, error) {
	raw, err := splitObject(b)
	if err != nil {
		var se *syntaxError
		if errors.As(err, &se) {
			return Event{}, invalid("event", "%s", se.msg)
		}
		return Event{}, err
	}
	return decodeObjectAs(raw, -1, true)
}

// DecodeBatchJSON decodes a CloudEvents JSON batch (an array of structured
// events). Errors carry the index of the offending event.
func DecodeBatchJSON(b []byte, maxData int) ([]Event, error) {
	raws, err := splitArray(b)
	if err != nil {
		return nil, invalid("batch", "not a JSON array: %v", err)
	}
	return decodeBatch(raws, maxData, 0)
}

func decodeBatch(raws []json.RawMessage, maxData, offset int) ([]Event, error) {
	out := make([]Event, 0, len(raws))
	for i, r := range raws {
		e, err := DecodeJSON(r, maxData)
		if err != nil {
			return nil, withIndex(err, offset+i)
		}
		out = append(out, e)
	}
	return out, nil
}

// DecodeSequence reads every event from r: any mix of structured JSON
// events and JSON batch arrays, separated by any white space (pretty-printed
// input is fine). Errors carry the index of the offending event.
func DecodeSequence(r io.Reader, maxData int) ([]Event, error) {
	in, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	var out []Event
	for i := skipWS(in, 0); i < len(in); i = skipWS(in, i) {
		end, err := skipValue(in, i)
		if err != nil {
			return nil, &InvalidError{Index: len(out), Field: "event", Reason: "not JSON: " + err.Error()}
		}
		raw := in[i:end:end]
		i = end
		if raw[0] != '{' && raw[0] != '[' && !json.Valid(raw) {
			return nil, &InvalidError{Index: len(out), Field: "event", Reason: "not JSON: " + truncate(string(raw))}
		}
		if raw[0] == '[' {
			raws, err := splitArray(raw)
			if err != nil {
				return nil, &InvalidError{Index: len(out), Field: "batch", Reason: err.Error()}
			}
			evs, err := decodeBatch(raws, maxData, len(out))
			if err != nil {
				return nil, err
			}
			out = append(out, evs...)
			continue
		}
		e, err := DecodeJSON(raw, maxData)
		if err != nil {
			return nil, withIndex(err, len(out))
		}
		out = append(out, e)
	}
	return out, nil
}

func isNull(r json.RawMessage) bool { return string(bytes.TrimSpace(r)) == "null" }

func jsonString(raw map[string]json.RawMessage, name string, required bool) (string, error) {
	r, ok := raw[name]
	if !ok || isNull(r) {
		if required {
			return "", invalid(name, "required and missing")
		}
		return "", nil
	}
	s, ok, err := stringValue(name, r)
	if err != nil {
		return "", err
	}
	if !ok {
		return "", invalid(name, "must be a JSON string, got %s", truncate(string(r)))
	}
	if s == "" {
		return "", invalid(name, "empty; omit the attribute instead")
	}
	return s, nil
}

// jsonInt reads an integer attribute that may come as a JSON number or as a
// decimal string (positions outgrow CloudEvents' 32-bit integers).
func jsonInt(raw map[string]json.RawMessage, name string) (int64, error) {
	r, ok := raw[name]
	if !ok || isNull(r) {
		return 0, nil
	}
	var s string
	if err := json.Unmarshal(r, &s); err != nil {
		s = string(bytes.TrimSpace(r))
		if !json.Valid(r) {
			s = "" // not a JSON number either: refused below
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return 0, invalid(name, "must be a non-negative integer, got %s", truncate(string(r)))
	}
	return n, nil
}

// rfc3339 is RFC 3339's date-time: time.Parse alone also takes a comma
// before the fraction, a one-digit hour and offsets such as +24:00 or
// +00:60, which the spec (and so CloudEvents) does not allow.
var rfc3339 = regexp.MustCompile(`^[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt][0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]+)?(?:[Zz]|[+-]([0-9]{2}):([0-9]{2}))$`)

// parseTimestamp parses an RFC 3339 date-time and returns it in UTC. It
// checks the field ranges (leap seconds are refused: Go cannot hold them).
func parseTimestamp(s string) (time.Time, bool) {
	m := rfc3339.FindStringSubmatch(s)
	if m == nil {
		return time.Time{}, false
	}
	if m[1] != "" && (m[1] > "23" || m[2] > "59") {
		return time.Time{}, false
	}
	// RFC 3339 allows a lower-case t and z; Go's layout does not.
	t, err := time.Parse(time.RFC3339Nano, strings.ToUpper(s))
	if err != nil {
		return time.Time{}, false
	}
	return t.UTC(), true
}

func decodeObject(raw map[string]json.RawMessage, maxData int) (Event, error) {
	return decodeObjectAs(raw, maxData, false)
}

// decodeObjectAs is decodeObject; stored skips the checks of input (see
// DecodeStoredJSON).
func decodeObjectAs(raw map[string]json.RawMessage, maxData int, stored bool) (Event, error) {
	var e Event
	sv, err := jsonString(raw, "specversion", true)
	if err != nil {
		return Event{}, err
	}
	if sv != SpecVersion {
		return Event{}, invalid("specversion", "%q is not supported: only %s", truncate(sv), SpecVersion)
	}
	if e.ID, err = jsonString(raw, "id", true); err != nil {
		return Event{}, err
	}
	if e.Source, err = jsonString(raw, "source", true); err != nil {
		return Event{}, err
	}
	if e.Type, err = jsonString(raw, "type", true); err != nil {
		return Event{}, err
	}
	if e.Stream, err = jsonString(raw, "subject", false); err != nil {
		return Event{}, err
	}
	if e.DataContentType, err = jsonString(raw, "datacontenttype", false); err != nil {
		return Event{}, err
	}
	if e.DataSchema, err = jsonString(raw, "dataschema", false); err != nil {
		return Event{}, err
	}
	ts, err := jsonString(raw, "time", false)
	if err != nil {
		return Event{}, err
	}
	if ts != "" {
		t, ok := parseTimestamp(ts)
		if !ok {
			return Event{}, invalid("time", "%q is not an RFC 3339 timestamp", truncate(ts))
		}
		e.Time, e.TimeSet = t, t.IsZero()
	}
	if e.Tenant, err = jsonString(raw, ExtTenant, false); err != nil {
		return Event{}, err
	}
	if e.CorrelationID, err = jsonString(raw, ExtCorrelationID, false); err != nil {
		return Event{}, err
	}
	if e.CausationID, err = jsonString(raw, ExtCausationID, false); err != nil {
		return Event{}, err
	}
	if e.StreamVersion, err = jsonInt(raw, ExtStreamVersion); err != nil {
		return Event{}, err
	}
	if e.Position, err = jsonInt(raw, ExtPosition); err != nil {
		return Event{}, err
	}
	tags, err := jsonString(raw, ExtTags, false)
	if err != nil {
		return Event{}, err
	}
	if e.Tags, err = DecodeTags(tags); err != nil {
		return Event{}, err
	}

	data, hasData := raw["data"]
	if hasData && isNull(data) {
		hasData = false
	}
	b64, hasB64 := raw["data_base64"]
	if hasB64 && isNull(b64) {
		hasB64 = false
	}
	dataChecked := false // JSON data proved valid by compaction
	switch {
	case hasData && hasB64:
		return Event{}, invalid("data", "both data and data_base64 are present")
	case hasB64:
		var s string
		if err := json.Unmarshal(b64, &s); err != nil {
			return Event{}, invalid("data_base64", "must be a JSON string")
		}
		d, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return Event{}, invalid("data_base64", "not base64: %v", err)
		}
		if e.IsJSON() {
			// JSON data is stored compacted however it arrived; data
			// that is not JSON is refused by Validate below.
			if c, err := compactJSON(d); err == nil {
				d, dataChecked = c, true
			}
		}
		e.Data = d
	case hasData && stored && e.IsJSON():
		if !json.Valid(data) {
			return Event{}, invalid("data", "not valid JSON")
		}
		e.Data = bytes.Clone(data)
	case hasData:
		if e.IsJSON() {
			c, err := compactJSON(data)
			if err != nil {
				return Event{}, invalid("data", "not valid JSON: %v", err)
			}
			e.Data, dataChecked = bytes.Clone(c), true
		} else {
			// Non-JSON content in the data member is a JSON string.
			s, ok, err := stringValue("data", data)
			if err != nil {
				return Event{}, err
			}
			if !ok {
				return Event{}, invalid("data", "content type %s needs data as a JSON string or data_base64", e.DataContentType)
			}
			e.Data = []byte(s)
		}
	}

	for name, r := range raw {
		if reserved[name] {
			continue
		}
		if !ValidExtensionName(name) {
			return Event{}, badExtensionName(name)
		}
		v, err := decodeExtensionValue(name, r)
		if err != nil {
			return Event{}, err
		}
		if v == nil {
			continue
		}
		if e.Extensions == nil {
			e.Extensions = make(map[string]any)
		}
		e.Extensions[name] = v
	}
	if stored {
		return e, nil
	}
	if err := e.validate(Limits{MaxDataBytes: maxData}, !dataChecked); err != nil {
		return Event{}, err
	}
	return e, nil
}

func decodeExtensionValue(name string, r json.RawMessage) (any, error) {
	r = bytes.TrimSpace(r)
	if len(r) == 0 || isNull(r) {
		return nil, nil
	}
	switch r[0] {
	case '"':
		s, ok, err := stringValue(name, r)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, invalid(name, "bad string: %s", truncate(string(r)))
		}
		return s, nil
	case 't', 'f':
		var b bool
		if err := json.Unmarshal(r, &b); err != nil {
			return nil, invalid(name, "bad boolean")
		}
		return b, nil
	default:
		n, err := strconv.ParseInt(string(r), 10, 32)
		if err == nil && !json.Valid(r) {
			err = errNotJSON // +1 or 01: ParseInt takes them, JSON does not
		}
		if err != nil {
			return nil, invalid(name, "extension value %s is not a string, a boolean or a 32-bit integer", truncate(string(r)))
		}
		return int32(n), nil
	}
}

// MarshalJSON encodes the event in the CloudEvents structured JSON format
// on one line: attributes in a fixed order, time in UTC, position as a
// decimal string, JSON data inline, other text as a string, binary as
// data_base64.
func (e Event) MarshalJSON() ([]byte, error) {
	return e.AppendJSON(make([]byte, 0, 256+len(e.Data))), nil
}

// AppendJSON appends the structured JSON encoding of e (see MarshalJSON).
func (e *Event) AppendJSON(b []byte) []byte {
	b = append(b, `{"specversion":"1.0","id":`...)
	b = appendString(b, e.ID)
	b = append(b, `,"source":`...)
	b = appendString(b, e.Source)
	b = append(b, `,"type":`...)
	b = appendString(b, e.Type)
	if e.Stream != "" {
		b = append(b, `,"subject":`...)
		b = appendString(b, e.Stream)
	}
	if e.HasTime() {
		b = append(b, `,"time":"`...)
		b = e.Time.UTC().AppendFormat(b, time.RFC3339Nano)
		b = append(b, '"')
	}
	if e.DataContentType != "" {
		b = append(b, `,"datacontenttype":`...)
		b = appendString(b, e.DataContentType)
	}
	if e.DataSchema != "" {
		b = append(b, `,"dataschema":`...)
		b = appendString(b, e.DataSchema)
	}
	if e.Tenant != "" {
		b = append(b, `,"tenant":`...)
		b = appendString(b, e.Tenant)
	}
	if e.StreamVersion > 0 {
		b = append(b, `,"streamversion":`...)
		b = strconv.AppendInt(b, e.StreamVersion, 10)
	}
	if e.Position > 0 {
		b = append(b, `,"position":"`...)
		b = strconv.AppendInt(b, e.Position, 10)
		b = append(b, '"')
	}
	if e.CorrelationID != "" {
		b = append(b, `,"correlationid":`...)
		b = appendString(b, e.CorrelationID)
	}
	if e.CausationID != "" {
		b = append(b, `,"causationid":`...)
		b = appendString(b, e.CausationID)
	}
	if len(e.Tags) > 0 {
		b = append(b, `,"`+ExtTags+`":`...)
		b = appendString(b, EncodeTags(e.Tags))
	}
	if len(e.Extensions) > 0 {
		names := make([]string, 0, len(e.Extensions))
		for n := range e.Extensions {
			names = append(names, n)
		}
		slices.Sort(names)
		for _, n := range names {
			b = append(b, ',')
			b = appendString(b, n)
			b = append(b, ':')
			switch v := e.Extensions[n].(type) {
			case string:
				b = appendString(b, v)
			case bool:
				b = strconv.AppendBool(b, v)
			case int32:
				b = strconv.AppendInt(b, int64(v), 10)
			default:
				b = appendString(b, fmt.Sprint(v))
			}
		}
	}
	if e.Data != nil {
		switch {
		case e.IsJSON() && json.Valid(e.Data):
			b = append(b, `,"data":`...)
			b = appendCompactJSON(b, e.Data)
		case !e.IsJSON() && utf8.Valid(e.Data):
			b = append(b, `,"data":`...)
			b = appendString(b, string(e.Data))
		default:
			b = append(b, `,"data_base64":"`...)
			b = base64.StdEncoding.AppendEncode(b, e.Data)
			b = append(b, '"')
		}
	}
	return append(b, '}')
}

// appendCompactJSON appends valid JSON data without insignificant white
// space, so the encoding stays on one line even for an event whose data
// was not compacted by Prepare or a decoder.
func appendCompactJSON(b, data []byte) []byte {
	if !bytes.ContainsAny(data, " \t\r\n") {
		return append(b, data...)
	}
	buf := bytes.NewBuffer(b)
	if err := json.Compact(buf, data); err != nil {
		// Unreachable for valid JSON; Compact leaves buf unchanged.
		return append(b, data...)
	}
	return buf.Bytes()
}

// UnmarshalJSON decodes a structured JSON event with the default data
// limit (see DecodeJSON).
func (e *Event) UnmarshalJSON(b []byte) error {
	d, err := DecodeJSON(b, 0)
	if err != nil {
		return err
	}
	*e = d
	return nil
}

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string. It escapes quotes, backslashes,
// control characters, and U+2028/U+2029 (so the output is safe in
// JavaScript too); invalid UTF-8 becomes U+FFFD.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
