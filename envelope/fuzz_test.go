package envelope_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/eventlite/eventlite/envelope"
)

// FuzzDecodeJSON feeds the same input to every decoder. None may panic;
// each either refuses it with a typed error or returns events that survive
// MarshalJSON -> DecodeJSON unchanged, encode on one line, encode the same
// bytes twice, and survive ToCloudEvent -> FromCloudEvent.
//
// Seeds: every conformance vector (events and batches) plus the corpus in
// testdata/fuzz/FuzzDecodeJSON, which `go test` runs as regular tests.
func FuzzDecodeJSON(f *testing.F) {
	for _, ct := range loadConformance(f) {
		if ct.Event != nil {
			f.Add([]byte(ct.Event))
		}
		if ct.Batch != nil {
			f.Add([]byte(ct.Batch))
		}
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		e, err := envelope.DecodeJSON(in, 0)
		if err != nil {
			checkTypedError(t, "DecodeJSON", err, false)
		} else {
			checkRoundTrip(t, e)
		}

		evs, err := envelope.DecodeBatchJSON(in, 0)
		if err != nil {
			checkTypedError(t, "DecodeBatchJSON", err, true)
		} else {
			for _, e := range evs {
				checkRoundTrip(t, e)
			}
		}

		evs, err = envelope.DecodeSequence(bytes.NewReader(in), 0)
		if err != nil {
			checkTypedError(t, "DecodeSequence", err, true)
		} else {
			for _, e := range evs {
				checkRoundTrip(t, e)
			}
		}
	})
}

func checkTypedError(t *testing.T, op string, err error, batch bool) {
	t.Helper()
	var ie *envelope.InvalidError
	var te *envelope.TooLargeError
	switch {
	case errors.As(err, &ie):
		if !errors.Is(err, envelope.ErrInvalidEvent) || ie.Field == "" || ie.Reason == "" {
			t.Fatalf("%s: incomplete InvalidError %+v", op, ie)
		}
		if !batch && ie.Index != -1 {
			t.Fatalf("%s: index %d for a single event", op, ie.Index)
		}
	case errors.As(err, &te):
		if !errors.Is(err, envelope.ErrTooLarge) || te.Field == "" || te.Size <= te.Limit {
			t.Fatalf("%s: inconsistent TooLargeError %+v", op, te)
		}
	default:
		t.Fatalf("%s: untyped error %T: %v", op, err, err)
	}
}

func checkRoundTrip(t *testing.T, e envelope.Event) {
	t.Helper()
	b1, err := e.MarshalJSON()
	if err != nil {
		t.Fatalf("MarshalJSON: %v", err)
	}
	if bytes.ContainsAny(b1, "\r\n") {
		t.Fatalf("MarshalJSON output is not one line: %q", b1)
	}
	if !json.Valid(b1) {
		t.Fatalf("MarshalJSON output is not JSON: %q", b1)
	}
	e2, err := envelope.DecodeJSON(b1, 0)
	if err != nil {
		t.Fatalf("DecodeJSON of MarshalJSON output %q: %v", b1, err)
	}
	if diff := cmp.Diff(e, e2); diff != "" {
		t.Fatalf("decode -> MarshalJSON -> decode (-want +got):\n%s\n%q", diff, b1)
	}
	b2, _ := e2.MarshalJSON()
	if !bytes.Equal(b1, b2) {
		t.Fatalf("MarshalJSON not stable:\n%q\n%q", b1, b2)
	}
	e3, err := envelope.FromCloudEvent(e.ToCloudEvent(), 0)
	if err != nil {
		t.Fatalf("FromCloudEvent(ToCloudEvent): %v", err)
	}
	if diff := cmp.Diff(e, e3); diff != "" {
		t.Fatalf("ToCloudEvent -> FromCloudEvent (-want +got):\n%s", diff)
	}
}
