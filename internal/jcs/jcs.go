// Package jcs is the JSON Canonicalization Scheme of RFC 8785: one exact
// byte form for every JSON value, so that two texts meaning the same data
// compare, and hash, equal. Objects have their members sorted by the
// UTF-16 code units of their names, numbers are written as ECMAScript's
// Number.prototype.toString writes an IEEE 754 double, strings escape only
// what JSON requires, and there is no white space.
//
// It knows no engine: the bytes an approval binds are the same on both.
//
// The input must be I-JSON (RFC 7493): valid UTF-8, no two members of one
// object with the same name, no lone surrogate, every number within the
// range of a double. A number is kept to a double's precision: write
// integers beyond 2^53 and exact decimals as strings.
package jcs

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// MaxDepth is how deeply arrays and objects may nest.
const MaxDepth = 64

// Error says where the input is not I-JSON, and why.
type Error struct {
	Offset int // byte offset in the input
	Reason string
}

func (e *Error) Error() string { return fmt.Sprintf("byte %d: %s", e.Offset, e.Reason) }

// Canonicalize returns the canonical form of the JSON text b, or an
// *Error.
func Canonicalize(b []byte) ([]byte, error) {
	p := &parser{b: b}
	p.space()
	v, err := p.value(0)
	if err != nil {
		return nil, err
	}
	p.space()
	if p.i != len(b) {
		return nil, p.fail("data after the JSON value")
	}
	return appendValue(make([]byte, 0, len(b)), v), nil
}

// A parsed value: nil, bool, float64, string, []any or []member.
type member struct {
	name  string
	units []uint16 // name in UTF-16, the sort key
	value any
}

type parser struct {
	b []byte
	i int
}

func (p *parser) fail(format string, a ...any) error {
	return &Error{Offset: p.i, Reason: fmt.Sprintf(format, a...)}
}

func (p *parser) space() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *parser) literal(word string, v any) (any, error) {
	if !strings.HasPrefix(string(p.b[p.i:min(len(p.b), p.i+len(word))]), word) {
		return nil, p.fail("not a JSON value")
	}
	p.i += len(word)
	return v, nil
}

func (p *parser) value(depth int) (any, error) {
	if p.i >= len(p.b) {
		return nil, p.fail("unexpected end of input")
	}
	switch c := p.b[p.i]; {
	case c == '{':
		return p.object(depth + 1)
	case c == '[':
		return p.array(depth + 1)
	case c == '"':
		return p.str()
	case c == 't':
		return p.literal("true", true)
	case c == 'f':
		return p.literal("false", false)
	case c == 'n':
		return p.literal("null", nil)
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number()
	default:
		return nil, p.fail("unexpected character %q", rune(c))
	}
}

func (p *parser) object(depth int) (any, error) {
	if depth > MaxDepth {
		return nil, p.fail("nested deeper than %d", MaxDepth)
	}
	p.i++ // {
	members := []member{}
	seen := map[string]bool{}
	p.space()
	if p.i < len(p.b) && p.b[p.i] == '}' {
		p.i++
		return members, nil
	}
	for {
		p.space()
		if p.i >= len(p.b) || p.b[p.i] != '"' {
			return nil, p.fail("expected a member name")
		}
		at := p.i
		name, err := p.str()
		if err != nil {
			return nil, err
		}
		if seen[name] {
			return nil, &Error{Offset: at, Reason: fmt.Sprintf("two members named %q", name)}
		}
		seen[name] = true
		p.space()
		if p.i >= len(p.b) || p.b[p.i] != ':' {
			return nil, p.fail("expected ':'")
		}
		p.i++
		p.space()
		v, err := p.value(depth)
		if err != nil {
			return nil, err
		}
		members = append(members, member{name: name, units: utf16.Encode([]rune(name)), value: v})
		p.space()
		if p.i >= len(p.b) {
			return nil, p.fail("unexpected end of input in an object")
		}
		switch p.b[p.i] {
		case ',':
			p.i++
		case '}':
			p.i++
			slices.SortFunc(members, func(a, b member) int { return slices.Compare(a.units, b.units) })
			return members, nil
		default:
			return nil, p.fail("expected ',' or '}'")
		}
	}
}

func (p *parser) array(depth int) (any, error) {
	if depth > MaxDepth {
		return nil, p.fail("nested deeper than %d", MaxDepth)
	}
	p.i++ // [
	items := []any{}
	p.space()
	if p.i < len(p.b) && p.b[p.i] == ']' {
		p.i++
		return items, nil
	}
	for {
		p.space()
		v, err := p.value(depth)
		if err != nil {
			return nil, err
		}
		items = append(items, v)
		p.space()
		if p.i >= len(p.b) {
			return nil, p.fail("unexpected end of input in an array")
		}
		switch p.b[p.i] {
		case ',':
			p.i++
		case ']':
			p.i++
			return items, nil
		default:
			return nil, p.fail("expected ',' or ']'")
		}
	}
}

func (p *parser) hex4() (rune, error) {
	if p.i+4 > len(p.b) {
		return 0, p.fail("short \\u escape")
	}
	v, err := strconv.ParseUint(string(p.b[p.i:p.i+4]), 16, 16)
	if err != nil {
		return 0, p.fail("bad \\u escape")
	}
	p.i += 4
	return rune(v), nil
}

func (p *parser) str() (string, error) {
	p.i++ // "
	var sb strings.Builder
	for {
		if p.i >= len(p.b) {
			return "", p.fail("unterminated string")
		}
		c := p.b[p.i]
		switch {
		case c == '"':
			p.i++
			return sb.String(), nil
		case c < 0x20:
			return "", p.fail("control character U+%04X in a string: escape it", c)
		case c == '\\':
			p.i++
			if p.i >= len(p.b) {
				return "", p.fail("unterminated escape")
			}
			e := p.b[p.i]
			p.i++
			switch e {
			case '"', '\\', '/':
				sb.WriteByte(e)
			case 'b':
				sb.WriteByte('\b')
			case 'f':
				sb.WriteByte('\f')
			case 'n':
				sb.WriteByte('\n')
			case 'r':
				sb.WriteByte('\r')
			case 't':
				sb.WriteByte('\t')
			case 'u':
				r, err := p.hex4()
				if err != nil {
					return "", err
				}
				if utf16.IsSurrogate(r) {
					if r >= 0xDC00 || p.i+6 > len(p.b) || p.b[p.i] != '\\' || p.b[p.i+1] != 'u' {
						return "", p.fail("lone surrogate \\u%04x", r)
					}
					p.i += 2
					lo, err := p.hex4()
					if err != nil {
						return "", err
					}
					if lo < 0xDC00 || lo > 0xDFFF {
						return "", p.fail("lone surrogate \\u%04x", r)
					}
					r = utf16.DecodeRune(r, lo)
				}
				sb.WriteRune(r)
			default:
				return "", p.fail("bad escape \\%c", e)
			}
		case c < utf8.RuneSelf:
			sb.WriteByte(c)
			p.i++
		default:
			r, size := utf8.DecodeRune(p.b[p.i:])
			if r == utf8.RuneError && size <= 1 {
				return "", p.fail("invalid UTF-8")
			}
			sb.WriteString(string(p.b[p.i : p.i+size]))
			p.i += size
		}
	}
}

func (p *parser) number() (any, error) {
	start := p.i
	digits := func() int {
		n := 0
		for p.i < len(p.b) && p.b[p.i] >= '0' && p.b[p.i] <= '9' {
			p.i++
			n++
		}
		return n
	}
	if p.b[p.i] == '-' {
		p.i++
	}
	intStart := p.i
	if n := digits(); n == 0 {
		return nil, p.fail("bad number")
	} else if n > 1 && p.b[intStart] == '0' {
		return nil, &Error{Offset: intStart, Reason: "leading zero in a number"}
	}
	if p.i < len(p.b) && p.b[p.i] == '.' {
		p.i++
		if digits() == 0 {
			return nil, p.fail("bad number: no digit after '.'")
		}
	}
	if p.i < len(p.b) && (p.b[p.i] == 'e' || p.b[p.i] == 'E') {
		p.i++
		if p.i < len(p.b) && (p.b[p.i] == '+' || p.b[p.i] == '-') {
			p.i++
		}
		if digits() == 0 {
			return nil, p.fail("bad number: no digit in the exponent")
		}
	}
	f, err := strconv.ParseFloat(string(p.b[start:p.i]), 64)
	if err != nil || math.IsInf(f, 0) {
		return nil, &Error{Offset: start, Reason: "number out of the range of a double: write it as a string"}
	}
	return f, nil
}

func appendValue(out []byte, v any) []byte {
	switch v := v.(type) {
	case nil:
		return append(out, "null"...)
	case bool:
		return strconv.AppendBool(out, v)
	case float64:
		s, _ := FormatNumber(v) // finite: checked by the parser
		return append(out, s...)
	case string:
		return appendString(out, v)
	case []any:
		out = append(out, '[')
		for i, e := range v {
			if i > 0 {
				out = append(out, ',')
			}
			out = appendValue(out, e)
		}
		return append(out, ']')
	case []member:
		out = append(out, '{')
		for i, m := range v {
			if i > 0 {
				out = append(out, ',')
			}
			out = appendString(out, m.name)
			out = append(out, ':')
			out = appendValue(out, m.value)
		}
		return append(out, '}')
	}
	panic(fmt.Sprintf("jcs: unexpected %T", v))
}

// appendString writes s as ECMAScript's JSON.stringify does: only '"',
// '\\' and the control characters below U+0020 are escaped, the usual
// ones by their short form, the others as \u00xx in lower case.
func appendString(out []byte, s string) []byte {
	const hex = "0123456789abcdef"
	out = append(out, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			out = append(out, '\\', c)
		case c == '\b':
			out = append(out, '\\', 'b')
		case c == '\f':
			out = append(out, '\\', 'f')
		case c == '\n':
			out = append(out, '\\', 'n')
		case c == '\r':
			out = append(out, '\\', 'r')
		case c == '\t':
			out = append(out, '\\', 't')
		case c < 0x20:
			out = append(out, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		default:
			out = append(out, c)
		}
	}
	return append(out, '"')
}

// ErrNotFinite: NaN and the infinities have no JSON form.
var ErrNotFinite = errors.New("NaN and infinities have no JSON form")

// FormatNumber writes f as ECMAScript's Number.prototype.toString does
// (ECMA-262, Number::toString): the shortest digits that read back as f,
// in plain notation from 1e-6 up to (not including) 1e21, in exponent
// notation ("1e+21", "1.5e-7") outside it; -0 is "0".
func FormatNumber(f float64) (string, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return "", ErrNotFinite
	}
	if f == 0 {
		return "0", nil
	}
	sign := ""
	if f < 0 {
		sign, f = "-", -f
	}
	// Shortest round-trip digits d[.ddd]e±x: s = the digits, k = len(s),
	// n = x + 1, so that f = s × 10^(n-k).
	e := strconv.FormatFloat(f, 'e', -1, 64)
	mant, exp, _ := strings.Cut(e, "e")
	x, _ := strconv.Atoi(exp)
	s := strings.Replace(mant, ".", "", 1)
	k, n := len(s), x+1
	var b strings.Builder
	b.WriteString(sign)
	switch {
	case k <= n && n <= 21:
		b.WriteString(s)
		b.WriteString(strings.Repeat("0", n-k))
	case 0 < n && n <= 21:
		b.WriteString(s[:n])
		b.WriteByte('.')
		b.WriteString(s[n:])
	case -6 < n && n <= 0:
		b.WriteString("0.")
		b.WriteString(strings.Repeat("0", -n))
		b.WriteString(s)
	default:
		b.WriteByte(s[0])
		if k > 1 {
			b.WriteByte('.')
			b.WriteString(s[1:])
		}
		b.WriteByte('e')
		if n-1 >= 0 {
			b.WriteByte('+')
		}
		b.WriteString(strconv.Itoa(n - 1))
	}
	return b.String(), nil
}
