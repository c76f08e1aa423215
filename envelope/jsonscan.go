package envelope

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf16"
	"unicode/utf8"
)

// This file splits structured JSON into members without encoding/json's
// map decoding, which keeps the last of two members of the same name,
// replaces invalid UTF-8 and lone surrogates with U+FFFD, and counts its
// nesting limit over the whole input rather than within the data.

// checkJSONText checks what encoding/json lets through but eventlite
// refuses in JSON text it keeps: invalid UTF-8 inside strings (json.Valid
// accepts it; decoding replaces it with U+FFFD), escaped lone surrogates
// such as \ud800 (decoding replaces them too), and nesting deeper than
// maxDepth (0: not checked). The syntax is checked elsewhere.
func checkJSONText(b []byte, maxDepth int) error {
	// Fast path: fewer brackets than the limit cannot nest past it, and
	// without escapes only invalid UTF-8 could be wrong.
	if (maxDepth <= 0 || bytes.Count(b, openBracket)+bytes.Count(b, openBrace) <= maxDepth) &&
		bytes.IndexByte(b, '\\') < 0 && utf8.Valid(b) {
		return nil
	}
	depth := 0
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case '"':
			end, err := checkStringBody(b, i+1)
			if err != nil {
				return err
			}
			i = end
		case '[', '{':
			depth++
			if maxDepth > 0 && depth > maxDepth {
				return fmt.Errorf("nests deeper than %d levels: flatten it", maxDepth)
			}
		case ']', '}':
			depth--
		}
	}
	return nil
}

// checkStringBody checks a JSON string's content from i (just after the
// opening quote) and returns the index of the closing quote, or len(b)
// when there is none (the syntax check reports that).
func checkStringBody(b []byte, i int) (int, error) {
	for ; i < len(b); i++ {
		c := b[i]
		switch {
		case c == '"':
			return i, nil
		case c == '\\':
			if i+1 >= len(b) || b[i+1] != 'u' {
				i++
				continue
			}
			r, ok := hex4(b, i+2)
			if ok && utf16.IsSurrogate(r) {
				if r < 0xdc00 && i+7 < len(b) && b[i+6] == '\\' && b[i+7] == 'u' {
					if r2, ok := hex4(b, i+8); ok && r2 >= 0xdc00 && r2 <= 0xdfff {
						i += 11
						continue
					}
				}
				return 0, fmt.Errorf("holds the lone surrogate \\u%04x, which is not a character: encode text as valid UTF-16 pairs", r)
			}
			i += 5
		case c >= utf8.RuneSelf:
			r, size := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && size == 1 {
				return 0, errors.New("is not valid UTF-8: send text as UTF-8")
			}
			i += size - 1
		}
	}
	return i, nil
}

var openBracket, openBrace = []byte{'['}, []byte{'{'}

// hex4 reads four hex digits at b[i:].
func hex4(b []byte, i int) (rune, bool) {
	if i+4 > len(b) {
		return 0, false
	}
	var r rune
	for _, c := range b[i : i+4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

func skipWS(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// endOfString returns the index of the quote that closes the string
// whose content starts at b[i], or -1.
func endOfString(b []byte, i int) int {
	for i < len(b) {
		j := bytes.IndexAny(b[i:], `"\`)
		if j < 0 {
			return -1
		}
		i += j
		if b[i] == '"' {
			return i
		}
		i += 2 // an escape: skip the backslash and the escaped byte
	}
	return -1
}

var errSyntax = errors.New("unexpected end of JSON input")

// skipValue returns the end of the JSON value that starts at b[i]. It
// finds the value's extent (strings, nesting) without checking its syntax
// or limiting its depth: whoever takes the value checks it.
func skipValue(b []byte, i int) (int, error) {
	depth := 0
	for j := i; j < len(b); j++ {
		switch b[j] {
		case '"':
			k := endOfString(b, j+1)
			if k < 0 {
				return 0, errSyntax
			}
			j = k
			if depth == 0 {
				return j + 1, nil
			}
		case '[', '{':
			depth++
		case ']', '}':
			if depth == 0 {
				if j == i {
					return 0, fmt.Errorf("unexpected %q at byte %d", b[j], j)
				}
				return j, nil
			}
			depth--
			if depth == 0 {
				return j + 1, nil
			}
		case ',', ':', ' ', '\t', '\r', '\n':
			if depth == 0 {
				if j == i {
					return 0, fmt.Errorf("unexpected %q at byte %d", b[j], j)
				}
				return j, nil
			}
		}
	}
	if depth > 0 || i >= len(b) {
		return 0, errSyntax
	}
	return len(b), nil
}

// syntaxError is a structural error in the JSON around the members.
type syntaxError struct{ msg string }

func (e *syntaxError) Error() string { return e.msg }

func syntaxf(format string, args ...any) error {
	return &syntaxError{msg: fmt.Sprintf(format, args...)}
}

// splitObject splits a JSON object into its members, refusing two members
// of the same name (compared after unescaping), and anything but white
// space after the object. The values are slices of b, unchecked.
func splitObject(b []byte) (map[string]json.RawMessage, error) {
	i := skipWS(b, 0)
	if i == len(b) || b[i] != '{' {
		return nil, syntaxf("not a JSON object: %s", truncate(string(bytes.TrimSpace(b))))
	}
	m := make(map[string]json.RawMessage, 16)
	i = skipWS(b, i+1)
	if i < len(b) && b[i] == '}' {
		i++
	} else {
		for {
			if i >= len(b) || b[i] != '"' {
				return nil, syntaxf("not a JSON object: expected a member name at byte %d", i)
			}
			k := endOfString(b, i+1)
			if k < 0 {
				return nil, syntaxf("not a JSON object: %v", errSyntax)
			}
			name, err := memberName(b[i : k+1])
			if err != nil {
				return nil, err
			}
			i = skipWS(b, k+1)
			if i >= len(b) || b[i] != ':' {
				return nil, syntaxf("not a JSON object: expected ':' after %q", truncate(name))
			}
			i = skipWS(b, i+1)
			end, err := skipValue(b, i)
			if err != nil {
				return nil, syntaxf("not a JSON object: member %q: %v", truncate(name), err)
			}
			if _, dup := m[name]; dup {
				if name == "" {
					return nil, invalid("event", "a member with an empty name appears twice: keep one")
				}
				return nil, invalid(truncate(name), "the member appears twice in the event: keep one")
			}
			m[name] = b[i:end:end]
			i = skipWS(b, end)
			if i < len(b) && b[i] == ',' {
				i = skipWS(b, i+1)
				continue
			}
			if i < len(b) && b[i] == '}' {
				i++
				break
			}
			return nil, syntaxf("not a JSON object: expected ',' or '}' after member %q", truncate(name))
		}
	}
	if i = skipWS(b, i); i != len(b) {
		return nil, syntaxf("not a JSON object: unexpected %q after the object", truncate(string(b[i:])))
	}
	return m, nil
}

// memberName decodes a member name (a JSON string with its quotes),
// refusing invalid UTF-8 and lone surrogates rather than replacing them.
func memberName(raw []byte) (string, error) {
	body := raw[1 : len(raw)-1]
	if bytes.IndexByte(body, '\\') < 0 && utf8.Valid(body) {
		return string(body), nil
	}
	if _, err := checkStringBody(raw, 1); err != nil {
		return "", invalid("event", "a member name %v", err)
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", syntaxf("not a JSON object: bad member name: %v", err)
	}
	return s, nil
}

// splitArray splits a JSON array into its elements, unchecked, refusing
// anything but white space after it.
func splitArray(b []byte) ([]json.RawMessage, error) {
	i := skipWS(b, 0)
	if i == len(b) || b[i] != '[' {
		return nil, syntaxf("not a JSON array")
	}
	var out []json.RawMessage
	i = skipWS(b, i+1)
	if i < len(b) && b[i] == ']' {
		i++
	} else {
		for {
			end, err := skipValue(b, i)
			if err != nil {
				return nil, syntaxf("element %d: %v", len(out), err)
			}
			out = append(out, b[i:end:end])
			i = skipWS(b, end)
			if i < len(b) && b[i] == ',' {
				i = skipWS(b, i+1)
				continue
			}
			if i < len(b) && b[i] == ']' {
				i++
				break
			}
			return nil, syntaxf("expected ',' or ']' after element %d", len(out)-1)
		}
	}
	if i = skipWS(b, i); i != len(b) {
		return nil, syntaxf("unexpected %q after the array", truncate(string(b[i:])))
	}
	return out, nil
}

// plainString reports whether a JSON string's content needs no decoding:
// no escape, no quote, no control character (which JSON refuses raw).
func plainString(body []byte) bool {
	for _, c := range body {
		if c < 0x20 || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// stringValue decodes a JSON string value, refusing invalid UTF-8 and
// lone surrogates rather than replacing them. ok is false when raw is not
// a JSON string.
func stringValue(name string, raw []byte) (s string, ok bool, err error) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return "", false, nil
	}
	body := raw[1 : len(raw)-1]
	if plainString(body) {
		if !utf8.Valid(body) {
			return "", true, invalid(name, "is not valid UTF-8: send text as UTF-8")
		}
		return string(body), true, nil
	}
	if _, err := checkStringBody(raw, 1); err != nil {
		return "", true, invalid(name, "%v", err)
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", false, nil
	}
	return s, true, nil
}
