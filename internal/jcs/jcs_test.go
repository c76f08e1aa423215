package jcs_test

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"math"
	"strconv"
	"testing"

	"github.com/eventlite/eventlite/internal/jcs"
)

// The examples of RFC 8785 section 3.2.2 (serialization) and 3.2.3
// (sorting), byte for byte.
func TestRFC8785Examples(t *testing.T) {
	cases := []struct{ name, in, want string }{
		{"3.2.2", `{
  "numbers": [333333333.33333329, 1E30, 4.50,
              2e-3, 0.000000000000000000000000001],
  "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
  "literals": [null, true, false]
}`, `{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\u000f\nA'B\"\\\\\"/"}`},
		{"3.2.3", `{
  "\u20ac": "Euro Sign",
  "\r": "Carriage Return",
  "\ufb33": "Hebrew Letter Dalet With Dagesh",
  "1": "One",
  "\ud83d\ude00": "Emoji: Grinning Face",
  "\u0080": "Control",
  "\u00f6": "Latin Small Letter O With Diaeresis"
}`, "{\"\\r\":\"Carriage Return\",\"1\":\"One\",\"\u0080\":\"Control\",\"ö\":\"Latin Small Letter O With Diaeresis\",\"€\":\"Euro Sign\",\"😀\":\"Emoji: Grinning Face\",\"\ufb33\":\"Hebrew Letter Dalet With Dagesh\"}"},
		{"nested and empty", ` { "b" : [ { "z":1, "a":{} } , [] ], "a" : "" } `, `{"a":"","b":[{"a":{},"z":1},[]]}`},
		{"no HTML escaping", `{"s":"<a href='x'>&\u2028</a>","\u007f":1}`, "{\"s\":\"<a href='x'>&\u2028</a>\",\"\u007f\":1}"},
		{"scalar", `-0.0`, `0`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := jcs.Canonicalize([]byte(c.in))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != c.want {
				t.Errorf("got  %s\nwant %s", got, c.want)
			}
			again, err := jcs.Canonicalize(got)
			if err != nil || string(again) != string(got) {
				t.Errorf("canonical form is not a fixed point: %s %v", again, err)
			}
		})
	}
	// A canonical text and its SHA-256 (as an effect's args_hash shows
	// it), recomputable with any JCS implementation and sha256sum.
	got, _ := jcs.Canonicalize([]byte(`{"b":1,"a":"x","c":[true,2]}`))
	sum := sha256.Sum256(got)
	if h := hex.EncodeToString(sum[:]); string(got) != `{"a":"x","b":1,"c":[true,2]}` || h != "04ceb95b6eab660e1db5b4cf9e1d8ad320a4772a2a22775bb679d53daabd84f2" {
		t.Errorf("%s %s", got, h)
	}
}

// The number samples of RFC 8785 Appendix B: IEEE 754 bits and the
// ECMAScript form.
func TestRFC8785Numbers(t *testing.T) {
	cases := []struct{ bits, want string }{
		{"0000000000000000", "0"},
		{"8000000000000000", "0"},
		{"0000000000000001", "5e-324"},
		{"8000000000000001", "-5e-324"},
		{"7fefffffffffffff", "1.7976931348623157e+308"},
		{"ffefffffffffffff", "-1.7976931348623157e+308"},
		{"4340000000000000", "9007199254740992"},
		{"c340000000000000", "-9007199254740992"},
		{"4430000000000000", "295147905179352830000"},
		{"44b52d02c7e14af5", "9.999999999999997e+22"},
		{"44b52d02c7e14af6", "1e+23"},
		{"44b52d02c7e14af7", "1.0000000000000001e+23"},
		{"444b1ae4d6e2ef4e", "999999999999999700000"},
		{"444b1ae4d6e2ef4f", "999999999999999900000"},
		{"444b1ae4d6e2ef50", "1e+21"},
		{"3eb0c6f7a0b5ed8c", "9.999999999999997e-7"},
		{"3eb0c6f7a0b5ed8d", "0.000001"},
		{"41b3de4355555553", "333333333.3333332"},
		{"41b3de4355555554", "333333333.33333325"},
		{"41b3de4355555555", "333333333.3333333"},
		{"41b3de4355555556", "333333333.3333334"},
		{"41b3de4355555557", "333333333.33333343"},
		{"becbf647612f3696", "-0.0000033333333333333333"},
		{"43143ff3c1cb0959", "1424953923781206.2"},
	}
	for _, c := range cases {
		u, err := strconv.ParseUint(c.bits, 16, 64)
		if err != nil {
			t.Fatal(err)
		}
		f := math.Float64frombits(u)
		got, err := jcs.FormatNumber(f)
		if err != nil || got != c.want {
			t.Errorf("%s: got %q %v, want %q", c.bits, got, err, c.want)
		}
		// Through the parser too: the ECMAScript form reads back as the
		// same double and canonicalizes to itself.
		if canon, err := jcs.Canonicalize([]byte(c.want)); err != nil || string(canon) != c.want {
			t.Errorf("%s: canonicalize %q: %q %v", c.bits, c.want, canon, err)
		}
	}
	for _, bits := range []string{"7fffffffffffffff", "7ff0000000000000", "fff0000000000000"} {
		u, _ := strconv.ParseUint(bits, 16, 64)
		if _, err := jcs.FormatNumber(math.Float64frombits(u)); !errors.Is(err, jcs.ErrNotFinite) {
			t.Errorf("%s: %v, want ErrNotFinite", bits, err)
		}
	}
}

// Input that is not I-JSON is refused with the offset, never guessed at.
func TestRefusesNonIJSON(t *testing.T) {
	deep := ""
	for range jcs.MaxDepth + 1 {
		deep += "["
	}
	for _, in := range []string{
		``, `{`, `{"a":1,}`, `[1,]`, `{"a":1,"a":2}`, `"\ud800"`, `"\udc00\ud800"`, `"\ud800\u0041"`,
		"\"\xff\"", "\"a\x01\"", `01`, `1.`, `1e`, `-`, `1e400`, `-1e400`, `tru`, `nul`, `{} {}`, `"\x"`, `NaN`, deep,
	} {
		_, err := jcs.Canonicalize([]byte(in))
		var je *jcs.Error
		if !errors.As(err, &je) {
			t.Errorf("%q: %v, want a *jcs.Error", in, err)
		}
	}
}

func FuzzCanonicalize(f *testing.F) {
	for _, s := range []string{`{"b":[1,2.5e-7,"x"],"a":null}`, `"\ud83d\ude00"`, `1e21`, `[true,false,{}]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		out, err := jcs.Canonicalize(b)
		if err != nil {
			return
		}
		again, err := jcs.Canonicalize(out)
		if err != nil || string(again) != string(out) {
			t.Fatalf("%q -> %q -> %q %v", b, out, again, err)
		}
	})
}
