package serve

import (
	"encoding/json"
	"testing"
)

// FuzzParseJSONBody: the body decoder never panics, and what it accepts
// is one JSON object of the named members, each once, whose values are
// what encoding/json reads from it (so no member was taken twice, and no
// string was taken for a number).
func FuzzParseJSONBody(f *testing.F) {
	for _, seed := range []string{
		`{"before":2}`, `{"before":2,"before":3}`, `{"before":"5"}`, `{"before":5.0}`, `{"before":-1}`,
		`{"token":"s"}`, `{"token":"a\ud800"}`, `{"token":"\u00e9"}`, `{"token":1}`, `{}`, `[]`, `{"before":2} x`,
		`{"by":"a","reason":"r"}`, `{"\u0062y":"a","by":"b"}`, "{\"by\":\"\xff\"}", `{"before":99999999999999999999}`,
	} {
		f.Add([]byte(seed))
	}
	members := []bodyMember{{name: "before", kind: jsonInteger}, {name: "token", kind: jsonString}, {name: "by", kind: jsonString}, {name: "reason", kind: jsonString}}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, p := parseJSONBody(b, "a body", members...)
		if p != nil {
			if p.Name() != "invalid-body" {
				t.Fatalf("%q: problem %s", b, p.Name())
			}
			return
		}
		var raw map[string]json.RawMessage
		if err := json.Unmarshal(b, &raw); err != nil {
			t.Fatalf("%q accepted, but encoding/json refuses it: %v", b, err)
		}
		if len(raw) != len(got.strings)+len(got.integers) {
			t.Fatalf("%q: %d members, decoded %v %v", b, len(raw), got.strings, got.integers)
		}
		for name, v := range got.strings {
			var want string
			if err := json.Unmarshal(raw[name], &want); err != nil || want != v {
				t.Fatalf("%q: %s = %q, encoding/json reads %q (%v)", b, name, v, want, err)
			}
		}
		for name, v := range got.integers {
			var want int64
			if err := json.Unmarshal(raw[name], &want); err != nil || want != v {
				t.Fatalf("%q: %s = %d, encoding/json reads %d (%v)", b, name, v, want, err)
			}
		}
	})
}
