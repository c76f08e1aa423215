package envelope

import (
	"bytes"
	"encoding/binary"
	"math/bits"
	"unicode/utf16"
	"unicode/utf8"
)

// This file checks JSON data in one pass that allocates nothing. Every
// append's events go through it, so it takes the place of the three
// passes (checkJSONText, json.Valid, json.Compact) that compactJSONSlow
// makes, and leaves them for data it cannot accept, to word the error.

// scanData reports whether b is JSON text that compactJSONSlow accepts:
// the syntax json.Valid accepts, no invalid UTF-8 and no escaped lone
// surrogate in its strings, nesting at most MaxDataDepth levels. spaces
// counts its insignificant white space (the bytes outside strings that
// compaction drops). When ok is false, b may be JSON that eventlite
// refuses or data this scan does not decide: the caller checks it again
// the slow way, which finds the error.
func scanData(b []byte) (spaces int, ok bool) {
	// objects has one bit per open container: set for an object, clear
	// for an array.
	var objects [(MaxDataDepth + 63) / 64]uint64
	depth := 0
	i, j, n := 0, 0, len(b)
	var c byte

value: // a value begins at b[i], after optional white space
	j = skipWS(b, i)
	spaces += j - i
	i = j
	if i >= n {
		return 0, false
	}
	switch c = b[i]; c {
	case '"':
		if i = scanString(b, i+1); i < 0 {
			return 0, false
		}
	case '{':
		if depth >= MaxDataDepth {
			return 0, false
		}
		objects[depth>>6] |= 1 << (depth & 63)
		depth++
		j = skipWS(b, i+1)
		spaces += j - i - 1
		i = j
		if i < n && b[i] == '}' {
			depth--
			i++
			break
		}
		goto member
	case '[':
		if depth >= MaxDataDepth {
			return 0, false
		}
		objects[depth>>6] &^= 1 << (depth & 63)
		depth++
		j = skipWS(b, i+1)
		spaces += j - i - 1
		i = j
		if i < n && b[i] == ']' {
			depth--
			i++
			break
		}
		goto value
	case 't':
		if n-i < 4 || string(b[i:i+4]) != "true" {
			return 0, false
		}
		i += 4
	case 'f':
		if n-i < 5 || string(b[i:i+5]) != "false" {
			return 0, false
		}
		i += 5
	case 'n':
		if n-i < 4 || string(b[i:i+4]) != "null" {
			return 0, false
		}
		i += 4
	default:
		if i = scanNumber(b, i); i < 0 {
			return 0, false
		}
	}

	// After a value: the end of the text, or a comma or the end of the
	// container it is in.
after:
	j = skipWS(b, i)
	spaces += j - i
	i = j
	if depth == 0 {
		return spaces, i == n
	}
	if i >= n {
		return 0, false
	}
	c = b[i]
	i++
	if objects[(depth-1)>>6]&(1<<((depth-1)&63)) != 0 {
		switch c {
		case ',':
			goto member
		case '}':
			depth--
			goto after
		}
		return 0, false
	}
	switch c {
	case ',':
		goto value
	case ']':
		depth--
		goto after
	}
	return 0, false

member: // an object member begins at b[i], after optional white space
	j = skipWS(b, i)
	spaces += j - i
	i = j
	if i >= n || b[i] != '"' {
		return 0, false
	}
	if i = scanString(b, i+1); i < 0 {
		return 0, false
	}
	j = skipWS(b, i)
	spaces += j - i
	i = j
	if i >= n || b[i] != ':' {
		return 0, false
	}
	i++
	goto value
}

// plainByte marks the bytes a JSON string holds as they are: printable
// ASCII but the quote and the backslash.
var plainByte = func() (t [256]bool) {
	for c := 0x20; c < 0x80; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// unplainBytes takes eight bytes of a string read little-endian and
// returns the high bit of each byte that plainByte refuses: exactly up to
// and including the first such byte; above it, the subtractions' borrows
// may set bits of plain bytes too.
func unplainBytes(x uint64) uint64 {
	q := x ^ '"'*ones
	bs := x ^ '\\'*ones
	return ((x-0x20*ones)&^x | (q-ones)&^q | (bs-ones)&^bs | x) & highs
}

// scanString returns the index just after the quote that closes the
// string whose content begins at b[i], or -1 when the string is not
// valid JSON, holds invalid UTF-8 or an escaped lone surrogate, or has no
// end.
func scanString(b []byte, i int) int {
	for {
		// Eight bytes at a time up to the first that needs a look, then
		// one at a time.
		for i+8 <= len(b) {
			if m := unplainBytes(binary.LittleEndian.Uint64(b[i:])); m != 0 {
				i += bits.TrailingZeros64(m) >> 3
				break
			}
			i += 8
		}
		for i < len(b) && plainByte[b[i]] {
			i++
		}
		if i >= len(b) {
			return -1
		}
		switch c := b[i]; {
		case c == '"':
			return i + 1
		case c == '\\':
			if i+1 >= len(b) {
				return -1
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				r, ok := hex4(b, i+2)
				if !ok {
					return -1
				}
				if !utf16.IsSurrogate(r) {
					i += 6
					break
				}
				// A high surrogate, then an escaped low one.
				if r >= 0xdc00 || i+7 >= len(b) || b[i+6] != '\\' || b[i+7] != 'u' {
					return -1
				}
				if r2, ok := hex4(b, i+8); !ok || r2 < 0xdc00 || r2 > 0xdfff {
					return -1
				}
				i += 12
			default:
				return -1
			}
		case c < 0x20: // a control character, which JSON refuses raw
			return -1
		default: // c >= utf8.RuneSelf
			r, size := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && size == 1 {
				return -1
			}
			i += size
		}
	}
}

// scanNumber returns the index just after the JSON number that begins at
// b[i], or -1 when there is none.
func scanNumber(b []byte, i int) int {
	n := len(b)
	if b[i] == '-' {
		i++
		if i >= n {
			return -1
		}
	}
	switch c := b[i]; {
	case c == '0':
		i++
	case '1' <= c && c <= '9':
		i = skipDigits(b, i+1)
	default:
		return -1
	}
	if i < n && b[i] == '.' {
		i++
		if i >= n || b[i] < '0' || b[i] > '9' {
			return -1
		}
		i = skipDigits(b, i+1)
	}
	if i < n && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < n && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= n || b[i] < '0' || b[i] > '9' {
			return -1
		}
		i = skipDigits(b, i+1)
	}
	return i
}

func skipDigits(b []byte, i int) int {
	for i < len(b) && '0' <= b[i] && b[i] <= '9' {
		i++
	}
	return i
}

// compactSpaces returns valid JSON b without its insignificant white
// space, of which it holds spaces bytes: the bytes json.Compact writes.
func compactSpaces(b []byte, spaces int) []byte {
	out := make([]byte, 0, len(b)-spaces)
	start, i := 0, 0
	for i < len(b) {
		switch c := b[i]; {
		case c == '"':
			i = endOfValidString(b, i+1) + 1
		case c > ' ':
			i++
		default:
			// White space: outside strings, valid JSON holds no other
			// byte below '!'.
			out = append(out, b[start:i]...)
			for i++; i < len(b) && b[i] <= ' '; i++ {
			}
			start = i
		}
	}
	return append(out, b[start:]...)
}

// endOfValidString returns the index of the quote that closes the string
// of valid JSON whose content begins at b[i]: the first quote after i
// that an odd number of backslashes does not escape.
func endOfValidString(b []byte, i int) int {
	for {
		q := i + bytes.IndexByte(b[i:], '"')
		k := q
		for k > i && b[k-1] == '\\' {
			k--
		}
		if (q-k)%2 == 0 {
			return q
		}
		i = q + 1
	}
}
