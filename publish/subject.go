package publish

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
// wildcard or white space in its literal text, only known placeholders.
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
	for _, p := range t.parts {
		if p.placeholder != "" {
			continue
		}
		if strings.ContainsAny(p.literal, "*>}") || strings.IndexFunc(p.literal, unicode.IsSpace) >= 0 || strings.IndexFunc(p.literal, unicode.IsControl) >= 0 {
			return bad("its fixed text may not hold '*', '>', '}', white space or control characters")
		}
	}
	return t, nil
}

// render returns the subject of an event: the template with each
// placeholder replaced by its value, sanitized.
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

// writeToken writes a placeholder's value with every character that a
// NATS subject token cannot hold ('.', '*', '>', white space, and control
// characters, which would break the protocol line) replaced by '_'.
func writeToken(b *strings.Builder, v string) {
	if v == "" {
		b.WriteByte('_')
		return
	}
	for _, r := range v {
		switch {
		case r == '.' || r == '*' || r == '>' || unicode.IsSpace(r) || unicode.IsControl(r) || r == utf8.RuneError:
			b.WriteByte('_')
		default:
			b.WriteRune(r)
		}
	}
}

// SanitizeToken returns v as a NATS subject token: '.', '*', '>', white
// space and control characters replaced by '_' (an empty v becomes "_").
func SanitizeToken(v string) string {
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
