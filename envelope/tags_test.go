package envelope_test

import (
	"errors"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/eventlite/eventlite/envelope"
)

// TestTagsEncodingRoundTrip: EncodeTags then DecodeTags gives the tags
// back byte for byte, for lists built from the separator, the escape and
// other characters (seeded; the seed is printed).
func TestTagsEncodingRoundTrip(t *testing.T) {
	seed := uint64(20261203)
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, seed))
	alphabet := []string{",", `\`, "a", "é", ":", " ", "x"}
	for range 5000 {
		n := 1 + r.IntN(5)
		var tags []string
		for len(tags) < n {
			var tag string
			for range 1 + r.IntN(6) {
				tag += alphabet[r.IntN(len(alphabet))]
			}
			if envelope.ValidateTag(tag) != nil || slices.Contains(tags, tag) {
				continue
			}
			tags = append(tags, tag)
		}
		enc := envelope.EncodeTags(tags)
		got, err := envelope.DecodeTags(enc)
		if err != nil || !slices.Equal(got, tags) {
			t.Fatalf("tags %q encoded %q decoded %q (%v)", tags, enc, got, err)
		}
	}
}

// TestTagsEncodingRefuses: values that no tag list encodes to are
// refused.
func TestTagsEncodingRefuses(t *testing.T) {
	for _, v := range []string{`a\`, `a\b`, `a,`, `,a`, `a,,b`, `a,a`, "a\x01", ` a`} {
		if tags, err := envelope.DecodeTags(v); err == nil {
			t.Errorf("DecodeTags(%q) = %q, want an error", v, tags)
		}
	}
}

// TestTagsEncodingEveryForm: the tags survive the CloudEvent, structured
// JSON and binary forms; a user extension of the reserved name is
// refused; tags count toward the event size.
func TestTagsEncodingEveryForm(t *testing.T) {
	tags := []string{`a,b`, `c\`, `\,`, "course:c1"}
	e, err := envelope.New("t", map[string]int{"n": 1})
	if err != nil {
		t.Fatal(err)
	}
	e.Source, e.Tags = "/test", tags
	if err := e.Prepare(e.Time, 0); err != nil {
		t.Fatal(err)
	}
	ce := e.ToCloudEvent()
	if v, _ := ce.Extensions()[envelope.ExtTags].(string); v != `a\,b,c\\,\\\,,course:c1` {
		t.Errorf("extension %q", v)
	}
	back, err := envelope.FromCloudEvent(ce, 0)
	if err != nil || !slices.Equal(back.Tags, tags) {
		t.Errorf("FromCloudEvent: %q, %v", back.Tags, err)
	}
	j, _ := e.MarshalJSON()
	back, err = envelope.DecodeJSON(j, 0)
	if err != nil || !slices.Equal(back.Tags, tags) {
		t.Errorf("DecodeJSON: %q, %v (%s)", back.Tags, err, j)
	}
	back, err = envelope.DecodeStoredJSON(j)
	if err != nil || !slices.Equal(back.Tags, tags) {
		t.Errorf("DecodeStoredJSON: %q, %v", back.Tags, err)
	}
	attrs := map[string]string{"specversion": "1.0", "id": "x", "source": "/s", "type": "t", envelope.ExtTags: envelope.EncodeTags(tags)}
	back, err = envelope.DecodeBinary(attrs, nil, 0)
	if err != nil || !slices.Equal(back.Tags, tags) {
		t.Errorf("DecodeBinary: %q, %v", back.Tags, err)
	}
	attrs[envelope.ExtTags] = `bad\`
	if _, err := envelope.DecodeBinary(attrs, nil, 0); !errors.Is(err, envelope.ErrInvalidEvent) {
		t.Errorf("DecodeBinary of a bad value: %v", err)
	}
	u := e.Clone()
	u.Tags = nil
	u.Extensions = map[string]any{envelope.ExtTags: "x"}
	if err := u.Validate(0); !errors.Is(err, envelope.ErrInvalidEvent) {
		t.Errorf("a free extension named %s: %v, want refused", envelope.ExtTags, err)
	}
	without := e.Clone()
	without.Tags = nil
	if d := e.EventBytes() - without.EventBytes(); d != len("ce-")+len(envelope.ExtTags)+len(envelope.EncodeTags(tags))+4 {
		t.Errorf("tags add %d bytes to EventBytes", d)
	}
	c := e.Clone()
	c.Tags[0] = "changed"
	if e.Tags[0] != tags[0] {
		t.Error("Clone shares the tags")
	}
}

// FuzzDecodeTags: what decodes encodes back to the same value.
func FuzzDecodeTags(f *testing.F) {
	for _, s := range []string{`a\,b,c\\`, `x`, `,`, `\`, `a,b`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		tags, err := envelope.DecodeTags(v)
		if err != nil {
			return
		}
		if enc := envelope.EncodeTags(tags); enc != v {
			t.Fatalf("DecodeTags(%q) = %q, which encodes as %q", v, tags, enc)
		}
	})
}
