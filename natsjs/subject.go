package natsjs

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/eventlite/eventlite/envelope"
)

// DefaultSubject is the default NATS subject template.
const DefaultSubject = "eventlite.{tenant}.{type}"

// subjectTemplate is a parsed NATS subject template: literal text and the
// placeholders {tenant}, {type} and {stream}.
type subjectTemplate struct {
	text  string
	parts []subjectPart
}

type subjectPart struct {
	literal     string
	placeholder string // "tenant", "type", "stream"; "" for a literal
}

// parseSubject checks a template: dot-separated tokens, none empty, no
// wildcard or white space in its literal text, only known placeholders,
// at most one placeholder per token (so that the subject tells the values
// apart: a value never holds a '.' once escaped).
func parseSubject(s string) (subjectTemplate, error) {
	t := subjectTemplate{text: s}
	bad := func(format string, args ...any) (subjectTemplate, error) {
		return subjectTemplate{}, fmt.Errorf("subject template %q: %s", s, fmt.Sprintf(format, args...))
	}
	if s == "" {
		return bad("empty")
	}
	for _, tok := range strings.Split(s, ".") {
		if tok == "" {
			return bad("has an empty token (two dots in a row, or a dot at an end)")
		}
	}
	rest := s
	for rest != "" {
		i := strings.IndexByte(rest, '{')
		if i < 0 {
			t.parts = append(t.parts, subjectPart{literal: rest})
			break
		}
		if i > 0 {
			t.parts = append(t.parts, subjectPart{literal: rest[:i]})
		}
		j := strings.IndexByte(rest[i:], '}')
		if j < 0 {
			return bad("a '{' without its '}'")
		}
		name := rest[i+1 : i+j]
		switch name {
		case "tenant", "type", "stream":
		default:
			return bad("unknown placeholder {%s}: use {tenant}, {type} or {stream}", name)
		}
		t.parts = append(t.parts, subjectPart{placeholder: name})
		rest = rest[i+j+1:]
	}
	inToken := "" // a placeholder already in the current token
	for _, p := range t.parts {
		if p.placeholder != "" {
			if inToken != "" {
				return bad("{%s} and {%s} share a token, so two different pairs of values could make one subject: give each placeholder a token of its own, such as x.{%s}.{%s}", inToken, p.placeholder, inToken, p.placeholder)
			}
			inToken = p.placeholder
			continue
		}
		if strings.Contains(p.literal, ".") {
			inToken = ""
		}
		if strings.ContainsAny(p.literal, "*>}") || strings.IndexFunc(p.literal, unicode.IsSpace) >= 0 || strings.IndexFunc(p.literal, unicode.IsControl) >= 0 {
			return bad("its fixed text may not hold '*', '>', '}', white space or control characters")
		}
	}
	return t, nil
}

// render returns the subject of an event: the template with each
// placeholder replaced by its value, escaped (see sanitizeToken).
func (t subjectTemplate) render(e *envelope.Event) string {
	var b strings.Builder
	b.Grow(len(t.text) + len(e.Tenant) + len(e.Type) + len(e.Stream))
	for _, p := range t.parts {
		switch p.placeholder {
		case "":
			b.WriteString(p.literal)
		case "tenant":
			writeToken(&b, e.Tenant)
		case "type":
			writeToken(&b, e.Type)
		case "stream":
			writeToken(&b, e.Stream)
		}
	}
	return b.String()
}

// EmptyToken is what an empty placeholder value becomes in a subject. No
// other value becomes it: every '_' written for a
// non-empty value is followed by two hex digits.
const EmptyToken = "_"

// plainByte tells, for each ASCII byte, whether a subject token carries it
// as it is. Bytes from 0x80 up are decided per rune.
var plainByte = func() (t [utf8.RuneSelf]bool) {
	for c := 0x21; c < 0x7f; c++ {
		t[c] = true
	}
	for _, c := range ".*>_" {
		t[c] = false
	}
	return t
}()

const upperHex = "0123456789ABCDEF"

// writeToken writes a placeholder's value as a NATS subject token,
// injectively (see sanitizeToken).
func writeToken(b *strings.Builder, v string) {
	if v == "" {
		b.WriteString(EmptyToken)
		return
	}
	for i := 0; i < len(v); {
		c := v[i]
		if c < utf8.RuneSelf {
			if plainByte[c] {
				b.WriteByte(c)
			} else {
				escapeBytes(b, v[i:i+1])
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(v[i:])
		if r == utf8.RuneError && n == 1 || unicode.IsSpace(r) || unicode.IsControl(r) {
			escapeBytes(b, v[i:i+n]) // invalid UTF-8, U+0085, U+00A0, U+2028 ...
		} else {
			b.WriteString(v[i : i+n])
		}
		i += n
	}
}

// escapeBytes writes each byte of s as '_' and two uppercase hex digits.
func escapeBytes(b *strings.Builder, s string) {
	for i := 0; i < len(s); i++ {
		b.WriteByte('_')
		b.WriteByte(upperHex[s[i]>>4])
		b.WriteByte(upperHex[s[i]&0xf])
	}
}

// sanitizeToken returns v as it appears in a NATS subject when it fills a
// placeholder: each byte of '.', '*', '>', '_', white space, a control
// character (Unicode Cc) or invalid UTF-8 is written as '_' and two
// uppercase hex digits ("a.b" is "a_2Eb", "a_b" is "a_5Fb"); every other
// byte is kept. An empty v is EmptyToken ("_"). The mapping is
// injective: two different values never share a token, so two tenants
// never share a subject.
func sanitizeToken(v string) string {
	var b strings.Builder
	writeToken(&b, v)
	return b.String()
}

// prefix is the template's fixed leading tokens, ending with a '.'
// ("eventlite." for "eventlite.{tenant}.{type}"); "" when the first token
// holds a placeholder.
func (t subjectTemplate) prefix() string {
	lit := ""
	if len(t.parts) > 0 && t.parts[0].placeholder == "" {
		lit = t.parts[0].literal
	}
	if len(t.parts) == 1 && lit != "" {
		return lit // no placeholder at all: the subject is fixed
	}
	i := strings.LastIndexByte(lit, '.')
	if i < 0 {
		return ""
	}
	return lit[:i+1]
}

// streamSubjects are the subjects a stream created for the template
// takes: its fixed prefix and '>'.
func (t subjectTemplate) streamSubjects() ([]string, error) {
	p := t.prefix()
	switch {
	case p == "":
		return nil, errors.New("subject template " + t.text + " starts with a placeholder: a stream created for it would take every subject; start it with a fixed token such as eventlite.")
	case !strings.HasSuffix(p, "."):
		return []string{p}, nil // a fixed subject
	}
	return []string{p + ">"}, nil
}
