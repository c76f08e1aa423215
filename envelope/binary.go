package envelope

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"unicode/utf8"
)

// DecodeBinary decodes an event in CloudEvents binary mode: its attributes
// come as name/value pairs (transport headers with the "ce-" prefix
// removed: "id", "source", "streamversion", ...) and its data is the
// message payload. Binary mode carries every attribute as a string, so
// extension values come back as strings. It validates like DecodeJSON.
func DecodeBinary(attrs map[string]string, data []byte, maxData int) (Event, error) {
	raw := make(map[string]json.RawMessage, len(attrs)+1)
	for name, v := range attrs {
		name = strings.ToLower(name)
		if name == "data" || name == "data_base64" {
			return Event{}, invalid(name, "not an attribute in binary mode: the data is the payload")
		}
		if !utf8.ValidString(v) {
			return Event{}, invalid(name, "is not valid UTF-8: send text as UTF-8")
		}
		b, err := json.Marshal(v)
		if err != nil {
			return Event{}, invalid(name, "cannot carry the value: %v", err)
		}
		raw[name] = b
	}
	if data != nil {
		if ct := attrs["datacontenttype"]; IsJSONContentType(ct) {
			if !json.Valid(data) {
				return Event{}, invalid("data", "content type %s but the payload is not valid JSON", nonEmpty(ct, DefaultContentType))
			}
			raw["data"] = data
		} else {
			b, _ := json.Marshal(base64.StdEncoding.EncodeToString(data))
			raw["data_base64"] = b
		}
	}
	return decodeObject(raw, maxData)
}

func nonEmpty(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
