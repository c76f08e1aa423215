package envelope

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/eventlite/eventlite/internal/benchdata"
)

// oldCompactJSON is compactJSON as it was before the one-pass scan
// (scanData), kept as compactJSONSlow to word compactJSON's errors: the
// reference that the table test, the fuzz test and the benchmark compare
// compactJSON with.
var oldCompactJSON = compactJSONSlow

// checkCompactJSON checks compactJSON(in) against oldCompactJSON(in):
// the same bytes or the same error text. It also checks that the
// one-pass scan decides every input on its own: it accepts exactly what
// the old code accepts, and counts exactly the white space the old code
// drops, so that the slow path runs only for input that is refused.
func checkCompactJSON(t *testing.T, in []byte) ([]byte, error) {
	t.Helper()
	orig := bytes.Clone(in)
	q := fmt.Sprintf("%.200q", in)
	got, err := compactJSON(in)
	want, wantErr := oldCompactJSON(in)
	if !bytes.Equal(in, orig) {
		t.Fatalf("compactJSON(%s) changed its input", q)
	}
	switch {
	case (err == nil) != (wantErr == nil):
		t.Fatalf("compactJSON(%s): error %v, old code: %v", q, err, wantErr)
	case err != nil && err.Error() != wantErr.Error():
		t.Fatalf("compactJSON(%s): error %q, old code: %q", q, err, wantErr)
	case !bytes.Equal(got, want):
		t.Fatalf("compactJSON(%s) = %.200q, old code: %.200q", q, got, want)
	}
	spaces, ok := scanData(in)
	if ok != (wantErr == nil) {
		t.Fatalf("scanData(%s) ok = %v, old code's error: %v", q, ok, wantErr)
	}
	if ok && spaces != len(in)-len(want) {
		t.Fatalf("scanData(%s) counts %d spaces, old code drops %d bytes", q, spaces, len(in)-len(want))
	}
	return got, err
}

// nest returns depth levels of containers around 1: arrays, objects or
// both in turn, with white space between the tokens when spaced.
func nest(depth int, kind string, spaced bool) []byte {
	sp := ""
	if spaced {
		sp = " "
	}
	var b strings.Builder
	for i := range depth {
		if kind == "[" || kind == "mixed" && i%2 == 0 {
			b.WriteString("[" + sp)
		} else {
			b.WriteString(`{` + sp + `"k"` + sp + `:` + sp)
		}
	}
	b.WriteString("1")
	for i := depth - 1; i >= 0; i-- {
		if kind == "[" || kind == "mixed" && i%2 == 0 {
			b.WriteString(sp + "]")
		} else {
			b.WriteString(sp + "}")
		}
	}
	return []byte(b.String())
}

const (
	errLone    = `holds the lone surrogate`
	errUTF8    = `is not valid UTF-8: send text as UTF-8`
	errDepth   = `nests deeper than 1000 levels: flatten it`
	errInvalid = `invalid character`
	errEnd     = `unexpected end of JSON input`
)

var compactJSONCases = []struct {
	name string
	in   string
	want string // the compacted data, when err is ""
	err  string // a part of the error text
}{
	// Numbers.
	{name: "zero", in: `0`, want: `0`},
	{name: "minus zero", in: `-0`, want: `-0`},
	{name: "exponent", in: `1e5`, want: `1e5`},
	{name: "signed capital exponent", in: `1E+5`, want: `1E+5`},
	{name: "negative exponent", in: `[1e-5,-2.5E-10]`, want: `[1e-5,-2.5E-10]`},
	{name: "fraction", in: `0.5`, want: `0.5`},
	{name: "big", in: `123456789012345678901234567890.0001`, want: `123456789012345678901234567890.0001`},
	{name: "leading zero", in: `01`, err: errInvalid},
	{name: "leading zeros", in: `[00]`, err: errInvalid},
	{name: "minus leading zero", in: `-01`, err: errInvalid},
	{name: "minus alone", in: `-`, err: errInvalid},
	{name: "minus then letter", in: `[-a]`, err: errInvalid},
	{name: "plus", in: `+1`, err: errInvalid},
	{name: "point first", in: `.5`, err: errInvalid},
	{name: "point last", in: `1.`, err: errInvalid},
	{name: "point then exponent", in: `[1.e5]`, err: errInvalid},
	{name: "exponent without digits", in: `1e`, err: errInvalid},
	{name: "signed exponent without digits", in: `[1e+]`, err: errInvalid},
	{name: "two points", in: `1.5.2`, err: errInvalid},
	{name: "hex", in: `0x10`, err: errInvalid},
	{name: "infinity", in: `Infinity`, err: errInvalid},
	{name: "nan", in: `[NaN]`, err: errInvalid},

	// White space.
	{name: "leading and trailing", in: " \t\r\n{\"a\":1} \n", want: `{"a":1}`},
	{name: "around every token", in: "{ \"a\" : [ 1 , 2 ] , \"b\" :\n{ } }", want: `{"a":[1,2],"b":{}}`},
	{name: "only in strings", in: `{"name":"Blue Widget","note":"  "}`, want: `{"name":"Blue Widget","note":"  "}`},
	{name: "in and out of strings", in: `{"name": "Blue Widget"}`, want: `{"name":"Blue Widget"}`},
	{name: "empty containers", in: `[ [ ] , { } ]`, want: `[[],{}]`},
	{name: "only white space", in: " \n\t", err: errEnd},
	{name: "form feed", in: "[1,\f2]", err: errInvalid},
	{name: "vertical tab", in: "\v1", err: errInvalid},
	{name: "no-break space", in: "[1,\u00a02]", err: errInvalid},
	{name: "byte order mark", in: "\ufeff{}", err: errInvalid},

	// Depth, counted within the data.
	{name: "arrays at the limit", in: string(nest(1000, "[", false)), want: string(nest(1000, "[", false))},
	{name: "objects at the limit", in: string(nest(1000, "{", false)), want: string(nest(1000, "{", false))},
	{name: "mixed at the limit, spaced", in: string(nest(1000, "mixed", true)), want: string(nest(1000, "mixed", false))},
	{name: "arrays past the limit", in: string(nest(1001, "[", false)), err: errDepth},
	{name: "objects past the limit", in: string(nest(1001, "{", false)), err: errDepth},
	{name: "mixed past the limit, spaced", in: string(nest(1001, "mixed", true)), err: errDepth},
	{name: "past the limit, unclosed", in: strings.Repeat("[", 1001), err: errDepth},
	{name: "brackets in a string", in: `["` + strings.Repeat("[{", 1001) + `"]`, want: `["` + strings.Repeat("[{", 1001) + `"]`},
	{name: "many at depth one", in: "[" + strings.Repeat("[],", 2000) + "[]]", want: "[" + strings.Repeat("[],", 2000) + "[]]"},

	// Escapes.
	{name: "every short escape", in: `"\"\\\/\b\f\n\r\t"`, want: `"\"\\\/\b\f\n\r\t"`},
	{name: "unicode escape", in: `"caf\u00e9 \u00E9"`, want: `"caf\u00e9 \u00E9"`},
	{name: "nul escape", in: `"\u0000"`, want: `"\u0000"`},
	{name: "unknown escape", in: `"\a"`, err: errInvalid},
	{name: "bad hex", in: `"\u00g0"`, err: errInvalid},
	{name: "short hex", in: `"\u12"`, err: errInvalid},
	{name: "escape at the end", in: `"\`, err: errInvalid},
	{name: "unterminated", in: `{"a":"b`, err: errEnd},
	{name: "escaped quote last", in: `"a\"`, err: errEnd},

	// Surrogates.
	{name: "pair", in: `"\ud83d\ude00"`, want: `"\ud83d\ude00"`},
	{name: "pair, capitals", in: `"\uD83D\uDE00"`, want: `"\uD83D\uDE00"`},
	{name: "pair, then more", in: `["\ud800\udc00x",1]`, want: `["\ud800\udc00x",1]`},
	{name: "lone high", in: `"\ud83d"`, err: errLone},
	{name: "lone high, then text", in: `"\ud83dx"`, err: errLone},
	{name: "lone low", in: `"\ude00"`, err: errLone},
	{name: "high, then a letter escape", in: `"\ud83d\u0041"`, err: errLone},
	{name: "high, then high", in: `"\ud83d\ud83d\ude00"`, err: errLone},
	{name: "high, then newline escape", in: `"\ud83d\n"`, err: errLone},
	{name: "low, then high", in: `"\udc00\ud800"`, err: errLone},
	{name: "high, then a short escape", in: `"\ud800\udc0"`, err: errLone},
	{name: "lone in a member name", in: `{"\udfff":1}`, err: errLone},

	// UTF-8.
	{name: "two-byte", in: `"é"`, want: `"é"`},
	{name: "four-byte", in: `"😀"`, want: `"😀"`},
	{name: "replacement character", in: "\"\xef\xbf\xbd\"", want: "\"\xef\xbf\xbd\""},
	{name: "invalid byte in a string", in: "\"\xff\"", err: errUTF8},
	{name: "truncated in a string", in: "[\"\xc3\"]", err: errUTF8},
	{name: "overlong in a string", in: "\"\xc0\xaf\"", err: errUTF8},
	{name: "surrogate in a string", in: "\"\xed\xa0\x80\"", err: errUTF8},
	{name: "invalid in a member name", in: "{\"\xff\":1}", err: errUTF8},
	{name: "invalid outside strings", in: "[1,\xff]", err: errInvalid},
	{name: "valid outside strings", in: "[1,é]", err: errInvalid},

	// Control characters: JSON refuses them raw in strings.
	{name: "raw nul", in: "\"a\x00b\"", err: errInvalid},
	{name: "raw unit separator", in: "\"\x1f\"", err: errInvalid},
	{name: "raw tab", in: "\"a\tb\"", err: errInvalid},
	{name: "raw newline", in: "{\"a\":\"x\ny\"}", err: errInvalid},
	{name: "delete", in: "\"\x7f\"", want: "\"\x7f\""},

	// Top-level values and structure.
	{name: "empty", in: ``, err: errEnd},
	{name: "string", in: `"s"`, want: `"s"`},
	{name: "true", in: `true`, want: `true`},
	{name: "false", in: ` false `, want: `false`},
	{name: "null", in: `null`, want: `null`},
	{name: "short literal", in: `tru`, err: errInvalid},
	{name: "wrong literal", in: `nul1`, err: errInvalid},
	{name: "literal, then letters", in: `truex`, err: errInvalid},
	{name: "two values", in: `true false`, err: errInvalid},
	{name: "two objects", in: `{}{}`, err: errInvalid},
	{name: "duplicate keys", in: `{"a":1,"a":2}`, want: `{"a":1,"a":2}`},
	{name: "trailing comma in an array", in: `[1,]`, err: errInvalid},
	{name: "trailing comma in an object", in: `{"a":1,}`, err: errInvalid},
	{name: "trailing comma, spaced", in: `{"a": 1 , }`, err: errInvalid},
	{name: "leading comma", in: `[,1]`, err: errInvalid},
	{name: "lone comma", in: `{,}`, err: errInvalid},
	{name: "name without value", in: `{"a"}`, err: errInvalid},
	{name: "colon without value", in: `{"a":}`, err: errInvalid},
	{name: "number as name", in: `{1:2}`, err: errInvalid},
	{name: "missing comma", in: `[1 2]`, err: errInvalid},
	{name: "missing comma between members", in: `{"a":1 "b":2}`, err: errInvalid},
	{name: "colon in an array", in: `[1:2]`, err: errInvalid},
	{name: "unclosed array", in: `[1,2`, err: errEnd},
	{name: "unclosed object", in: `{"a":1`, err: errEnd},
	{name: "extra bracket", in: `[1]]`, err: errInvalid},
	{name: "wrong bracket", in: `[1}`, err: errInvalid},
	{name: "wrong brace", in: `{"a":1]`, err: errInvalid},
}

// TestCompactJSON checks compactJSON on inputs at the edges of JSON's
// grammar and eventlite's checks: the expected result, the old code's
// result (same bytes, same error text), and that compact data comes back
// as data itself, without an allocation.
func TestCompactJSON(t *testing.T) {
	for _, c := range compactJSONCases {
		t.Run(c.name, func(t *testing.T) {
			in := []byte(c.in)
			got, err := checkCompactJSON(t, in)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("compactJSON(%.200q) = %.200q, %v; want an error with %q", c.in, got, err, c.err)
				}
				return
			}
			if err != nil || string(got) != c.want {
				t.Fatalf("compactJSON(%.200q) = %.200q, %v; want %.200q", c.in, got, err, c.want)
			}
			if c.want == c.in && unsafe.SliceData(got) != unsafe.SliceData(in) {
				t.Fatalf("compactJSON(%.200q) copied compact data", c.in)
			}
		})
	}
}

func TestCompactJSONAllocs(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	compact := benchdata.Payload(rng, "ord_000001")
	if !bytes.Contains(compact, []byte(" ")) {
		t.Fatalf("the payload has no space in its strings: %s", compact)
	}
	if n := testing.AllocsPerRun(100, func() {
		if _, err := compactJSON(compact); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Fatalf("compactJSON of compact data allocates %v times", n)
	}
	pretty := prettyJSON(compact)
	if n := testing.AllocsPerRun(100, func() {
		if _, err := compactJSON(pretty); err != nil {
			t.Fatal(err)
		}
	}); n != 1 {
		t.Fatalf("compactJSON of pretty-printed data allocates %v times, want 1", n)
	}
}

// TestCompactJSONEveryByte puts every byte value in every place of a few
// templates (in strings, escapes, numbers, literals, between tokens, at
// every offset of a long string), and
// checks every input of one and two bytes, against the old code: the
// fuzzer seldom hits one given byte in one given place.
func TestCompactJSONEveryByte(t *testing.T) {
	templates := []string{
		`%s`, `"%s"`, `"\%s"`, `"\u00%s0"`, `"\ud800\%s"`, `[1%s]`, `[-%s]`, `[1.%s]`, `[1e%s]`,
		`[t%s]`, `[nul%s]`, `[1,%s]`, `[1%s2]`, `{"a"%s1}`, `{"a":1%s}`, `{%s}`, `[%s]`, `%s1`, `1%s`,
		`["\ud83d\ude00%s"]`, `{"a":"b"%s"c":1}`, `"\ud800\u%sc00"`, `"\ud800\udc0%s"`,
	}
	// In strings long enough to be read eight bytes at a time, at every
	// offset in a word.
	for k := range 17 {
		templates = append(templates, `["`+strings.Repeat("a", k)+`%s`+strings.Repeat("b", 17-k)+`"]`)
	}
	for _, tmpl := range templates {
		for c := range 256 {
			checkCompactJSON(t, []byte(strings.Replace(tmpl, "%s", string([]byte{byte(c)}), 1)))
		}
	}
	for c := range 1 << 16 {
		checkCompactJSON(t, []byte{byte(c >> 8), byte(c)})
	}
}

// FuzzCompactJSON checks that compactJSON returns the same bytes or the
// same error text as the old code (oldCompactJSON) for any input, and
// that its one-pass scan accepts exactly what the old code accepts.
// Seeds: TestCompactJSON's cases and benchmark payloads, compact and
// pretty-printed.
func FuzzCompactJSON(f *testing.F) {
	for _, c := range compactJSONCases {
		f.Add([]byte(c.in))
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range 4 {
		p := benchdata.Payload(rng, fmt.Sprintf("ord_%06d", i))
		f.Add(p)
		f.Add(prettyJSON(p))
	}
	f.Add(nest(20, "mixed", true))
	f.Fuzz(func(t *testing.T, in []byte) {
		checkCompactJSON(t, in)
	})
}

func prettyJSON(b []byte) []byte {
	var buf bytes.Buffer
	if err := json.Indent(&buf, b, "", "  "); err != nil {
		panic(err)
	}
	return buf.Bytes()
}

// BenchmarkCompactJSON runs compactJSON against the old code
// (oldCompactJSON) on the same payloads in the same run, in turns of 100
// calls, and reports each side's time per call and x_old = new rate / old
// rate (higher is faster). Payloads: the store benchmark's (compact, with
// spaces in strings), the same without any space, and pretty-printed.
func BenchmarkCompactJSON(b *testing.B) {
	const n = 256
	rng := rand.New(rand.NewPCG(7, 42))
	store := make([][]byte, n)
	for i := range store {
		store[i] = benchdata.Payload(rng, fmt.Sprintf("ord_%06d", i))
	}
	nospace := make([][]byte, n)
	pretty := make([][]byte, n)
	for i, p := range store {
		nospace[i] = bytes.ReplaceAll(p, []byte(" "), []byte("_"))
		pretty[i] = prettyJSON(p)
	}
	for _, c := range []struct {
		name     string
		payloads [][]byte
	}{{"store", store}, {"nospace", nospace}, {"pretty", pretty}} {
		b.Run("data="+c.name, func(b *testing.B) {
			var oldDur, newDur time.Duration
			var ops, size int
			for b.Loop() {
				t0 := time.Now()
				for i := range 100 {
					if _, err := oldCompactJSON(c.payloads[(ops+i)%n]); err != nil {
						b.Fatal(err)
					}
				}
				t1 := time.Now()
				for i := range 100 {
					p := c.payloads[(ops+i)%n]
					if _, err := compactJSON(p); err != nil {
						b.Fatal(err)
					}
					size += len(p)
				}
				t2 := time.Now()
				oldDur += t1.Sub(t0)
				newDur += t2.Sub(t1)
				ops += 100
			}
			b.ReportMetric(float64(newDur.Nanoseconds())/float64(ops), "ns/event")
			b.ReportMetric(float64(oldDur.Nanoseconds())/float64(ops), "old_ns/event")
			b.ReportMetric(float64(size)/float64(ops), "bytes/event")
			b.ReportMetric(float64(oldDur)/float64(newDur), "x_old")
		})
	}
}
