package envelope

import (
	"strconv"
	"strings"
)

// ExtTags is the CloudEvents extension that carries an event's tags: one
// string, the tags in the event's order, each with its separators and
// backslashes escaped (see EncodeTags). The name is in eventlite's own
// namespace (a user's extension cannot be called so: it is reserved) and
// meets the CloudEvents naming rules (a-z and 0-9, at most 20
// characters).
const ExtTags = "eventlitetags"

// Limits and syntax of tags.
const (
	// MaxTags is the most tags one event carries.
	MaxTags = 32
	// MaxTagBytes is the longest tag, in bytes.
	MaxTagBytes = 255
	// TagSeparator separates the tags in the ExtTags extension.
	TagSeparator = ','
	// TagEscape escapes a TagSeparator or a TagEscape that is part of a
	// tag in the ExtTags extension.
	TagEscape = '\\'
)

// ValidateTag checks one tag: 1 to MaxTagBytes bytes of valid UTF-8,
// without control characters (Unicode Cc), not starting or ending with
// white space (transports trim attribute values). Any other character,
// the separator and the escape included, is allowed.
func ValidateTag(tag string) error {
	return checkTag(-1, tag)
}

func checkTag(i int, tag string) error {
	name := "tag"
	if i >= 0 {
		name = "tag " + strconv.Itoa(i)
	}
	switch {
	case tag == "":
		return invalid("tags", "%s is empty: a tag has at least one character", name)
	case len(tag) > MaxTagBytes:
		return &TooLargeError{Index: -1, Field: "tags", Size: len(tag), Limit: MaxTagBytes}
	}
	if reason := badText(tag); reason != "" {
		return invalid("tags", "%s %s", name, reason)
	}
	return nil
}

// ValidateTags checks an event's tags: at most MaxTags, each valid
// (ValidateTag), no tag twice. The error is an *InvalidError or a
// *TooLargeError whose Field is "tags".
func ValidateTags(tags []string) error {
	if len(tags) > MaxTags {
		return invalid("tags", "%d tags, more than the %d an event carries", len(tags), MaxTags)
	}
	for i, t := range tags {
		if err := checkTag(i, t); err != nil {
			return err
		}
		for j := range i {
			if tags[j] == t {
				return invalid("tags", "tag %d %s repeats tag %d: give each tag once", i, strconv.Quote(truncate(t)), j)
			}
		}
	}
	return nil
}

// EncodeTags is the value of the ExtTags extension for tags: the tags
// joined by TagSeparator, a TagSeparator or TagEscape within a tag
// preceded by TagEscape. It is "" for no tags (the extension is then
// left out). DecodeTags reverses it byte for byte.
func EncodeTags(tags []string) string {
	if len(tags) == 0 {
		return ""
	}
	n := len(tags) - 1
	for _, t := range tags {
		n += len(t)
	}
	var b strings.Builder
	b.Grow(n + 4)
	for i, t := range tags {
		if i > 0 {
			b.WriteByte(TagSeparator)
		}
		for j := 0; j < len(t); j++ {
			if c := t[j]; c == TagSeparator || c == TagEscape {
				b.WriteByte(TagEscape)
			}
			b.WriteByte(t[j])
		}
	}
	return b.String()
}

// encodedTagsLen is len(EncodeTags(tags)) without building it.
func encodedTagsLen(tags []string) int {
	if len(tags) == 0 {
		return 0
	}
	n := len(tags) - 1
	for _, t := range tags {
		n += len(t) + strings.Count(t, ",") + strings.Count(t, `\`)
	}
	return n
}

// DecodeTags reads the value of the ExtTags extension and validates the
// tags (ValidateTags). A TagEscape must be followed by TagSeparator or
// TagEscape. The empty string is no tags.
func DecodeTags(v string) ([]string, error) {
	if v == "" {
		return nil, nil
	}
	var tags []string
	var cur strings.Builder
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch c {
		case TagEscape:
			if i+1 == len(v) || (v[i+1] != TagSeparator && v[i+1] != TagEscape) {
				return nil, invalid(ExtTags, "a %q at byte %d escapes neither %q nor %q", TagEscape, i, TagSeparator, TagEscape)
			}
			i++
			cur.WriteByte(v[i])
		case TagSeparator:
			tags = append(tags, cur.String())
			cur.Reset()
		default:
			cur.WriteByte(c)
		}
		if len(tags) > MaxTags {
			return nil, invalid(ExtTags, "more than the %d tags an event carries", MaxTags)
		}
	}
	tags = append(tags, cur.String())
	if err := ValidateTags(tags); err != nil {
		return nil, err
	}
	return tags, nil
}

// HasTag reports whether the event carries tag.
func (e *Event) HasTag(tag string) bool {
	for _, t := range e.Tags {
		if t == tag {
			return true
		}
	}
	return false
}
