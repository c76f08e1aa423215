package envelope_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/eventlite/eventlite/envelope"
)

// FuzzDecodeBinary: binary-mode attributes (as "name=value" lines) and a
// payload never panic the decoder; a decoded event survives structured
// JSON and back unchanged, except that binary mode carries extensions as
// strings.
func FuzzDecodeBinary(f *testing.F) {
	f.Add("specversion=1.0\nid=e1\nsource=/s\ntype=t\nsubject=order-1\nstreamversion=3\nposition=3000000001\ndatacontenttype=application/json", []byte(`{"a": 1}`))
	f.Add("specversion=1.0\nid=e2\nsource=/s\ntype=t\ndatacontenttype=application/octet-stream\nextstring=x", []byte{0, 1, 2, 0xff})
	f.Add("specversion=1.0\nid=e3\nsource=#frag\ntype=t\ntime=2018-04-05T17:31:00Z\ntenant=acme", []byte(nil))
	f.Add("specversion=0.3\nid=\nsource=\ntype=", []byte("{"))
	f.Fuzz(func(t *testing.T, header string, data []byte) {
		attrs := map[string]string{}
		for line := range strings.SplitSeq(header, "\n") {
			k, v, ok := strings.Cut(line, "=")
			if ok {
				attrs[k] = v
			}
		}
		e, err := envelope.DecodeBinary(attrs, data, 0)
		if err != nil {
			if !errors.Is(err, envelope.ErrInvalidEvent) && !errors.Is(err, envelope.ErrTooLarge) {
				t.Fatalf("untyped error: %v", err)
			}
			return
		}
		b, err := e.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		again, err := envelope.DecodeJSON(b, 0)
		if err != nil {
			t.Fatalf("re-decode of %s: %v", b, err)
		}
		if diff := cmp.Diff(e, again); diff != "" {
			t.Fatalf("binary -> JSON -> decode changed the event (-binary +json):\n%s", diff)
		}
	})
}
