package command

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"reflect"
	"strings"

	"github.com/eventlite/eventlite/envelope"
)

// InputHash is the hash of a command's input that the operation ledger
// compares: the stream, the payload's Go type and its canonical JSON
// (encoding/json output: struct fields in declaration order, map keys
// sorted), leaving out top-level struct fields tagged `idem:"-"`.
func InputHash(stream string, payload any) (string, error) {
	b, err := canonicalJSON(payload)
	if err != nil {
		return "", &envelope.InvalidError{Index: -1, Field: "payload", Reason: "cannot encode the command as JSON: " + err.Error()}
	}
	h := sha256.New()
	h.Write([]byte(stream))
	h.Write([]byte{0})
	h.Write([]byte(reflect.TypeOf(payload).String()))
	h.Write([]byte{0})
	h.Write(b)
	return hex.EncodeToString(h.Sum(nil)), nil
}

func canonicalJSON(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	skip := volatileFields(reflect.TypeOf(v))
	if len(skip) == 0 {
		return b, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	for _, name := range skip {
		delete(m, name)
	}
	return json.Marshal(m) // map keys come out sorted
}

// volatileFields lists the JSON names of the top-level fields tagged
// `idem:"-"`.
func volatileFields(t reflect.Type) []string {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t.Kind() != reflect.Struct {
		return nil
	}
	var names []string
	for f := range t.Fields() {
		if f.Tag.Get("idem") != "-" || !f.IsExported() {
			continue
		}
		name := f.Name
		if tag := f.Tag.Get("json"); tag != "" {
			if n, _, _ := strings.Cut(tag, ","); n != "" && n != "-" {
				name = n
			}
		}
		names = append(names, name)
	}
	return names
}
