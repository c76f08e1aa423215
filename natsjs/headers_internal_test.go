package natsjs

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/binding"
	"github.com/cloudevents/sdk-go/v2/binding/spec"
	"github.com/cloudevents/sdk-go/v2/types"
	"github.com/google/go-cmp/cmp"
	"github.com/nats-io/nats.go"

	"github.com/eventlite/eventlite/envelope"
)

// sdkHeaders is the reference: the event through sdk-go's binding
// (ToCloudEvent, binding.Write in binary mode) into a BinaryWriter that
// writes NATS headers as sdk-go's NATS JetStream binding does ("ce-" and
// the attribute name, the canonical string value).
func sdkHeaders(e *envelope.Event) (nats.Header, error) {
	ce := e.ToCloudEvent()
	w := &sdkHeaderWriter{h: nats.Header{}}
	_, err := binding.Write(binding.WithForceBinary(context.Background()), binding.ToMessage(&ce), nil, w)
	return w.h, err
}

type sdkHeaderWriter struct{ h nats.Header }

func (w *sdkHeaderWriter) Start(context.Context) error { return nil }
func (w *sdkHeaderWriter) End(context.Context) error   { return nil }
func (w *sdkHeaderWriter) SetData(io.Reader) error     { return nil }
func (w *sdkHeaderWriter) SetAttribute(a spec.Attribute, v any) error {
	return w.SetExtension(a.Name(), v)
}
func (w *sdkHeaderWriter) SetExtension(name string, v any) error {
	s, err := types.Format(v)
	if err != nil {
		return err
	}
	w.h.Set("ce-"+name, s)
	return nil
}

func headerEvents() []envelope.Event {
	base := envelope.Event{ID: "01J9ZZZZZZZZZZZZZZZZZZZZZZ", Source: "/bench", Type: "order.placed", Stream: "order 1 ü", Tenant: "default",
		Time: time.Date(2025, 1, 2, 3, 4, 5, 120000000, time.UTC), DataContentType: "application/json", Data: []byte(`{"a":1}`), StreamVersion: 3, Position: 1 << 40}
	full := base
	full.Source, full.DataSchema = "HTTPS://Example.com/a b", "https://example.com/schema/2"
	full.CorrelationID, full.CausationID = "c1", "c2"
	full.Extensions = map[string]any{"traceparent": "00-x", "n": int32(-7), "ok": true, "empty": ""}
	full.Time = time.Date(2025, 1, 2, 3, 4, 5, 0, time.FixedZone("x", 3600))
	bare := envelope.Event{ID: "x", Source: "urn:a", Type: "t"}
	return []envelope.Event{base, full, bare}
}

func TestBinaryHeadersMatchSDK(t *testing.T) {
	for i, e := range headerEvents() {
		want, err := sdkHeaders(&e)
		if err != nil {
			t.Fatal(err)
		}
		got, err := binaryHeaders(&e)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("event %d (-sdk-go +ours):\n%s", i, diff)
		}
	}
}

// FuzzBinaryHeadersMatchSDK: for any valid event, the headers are the ones
// sdk-go's binding writes, or the event is refused as one NATS headers
// cannot carry.
func FuzzBinaryHeadersMatchSDK(f *testing.F) {
	for _, e := range headerEvents() {
		f.Add(e.ID, e.Source, e.Type, e.Stream, e.DataSchema, e.CorrelationID, "ext", int64(e.Time.UnixNano()), e.StreamVersion, e.Position)
	}
	f.Fuzz(func(t *testing.T, id, source, typ, stream, schema, corr, ext string, nanos, version, position int64) {
		e := envelope.Event{ID: id, Source: source, Type: typ, Stream: stream, DataSchema: schema, CorrelationID: corr,
			Tenant: "t", Time: time.Unix(0, nanos).UTC(), StreamVersion: version, Position: position,
			Extensions: map[string]any{"x": ext}}
		if e.Validate(-1) != nil {
			return
		}
		got, err := binaryHeaders(&e)
		if err != nil {
			if !strings.Contains(err.Error(), "NATS headers cannot carry") {
				t.Fatalf("unexpected refusal: %v", err)
			}
			return
		}
		want, err := sdkHeaders(&e)
		if err != nil {
			t.Fatalf("sdk-go refuses what we encode: %v", err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("(-sdk-go +ours):\n%s", diff)
		}
	})
}

func BenchmarkBinaryHeaders(b *testing.B) {
	e := headerEvents()[0]
	b.Run("ours", func(b *testing.B) {
		for range b.N {
			if _, err := binaryHeaders(&e); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("sdk-go", func(b *testing.B) {
		for range b.N {
			if _, err := sdkHeaders(&e); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// The ce-time header keeps any instant RFC 3339 can write, to the
// nanosecond, an explicit 0001-01-01T00:00:00Z (Event.TimeSet) included;
// an event without a time has no ce-time header.
func TestBinaryHeadersKeepFarTimes(t *testing.T) {
	for _, ts := range []string{"0001-01-01T00:00:00Z", "0001-01-01T00:00:00.000000001Z", "1677-09-21T00:00:00Z",
		"2262-04-12T00:00:00Z", "9999-12-31T23:59:59.999999999Z"} {
		at, err := time.Parse(time.RFC3339Nano, ts)
		if err != nil {
			t.Fatal(err)
		}
		e := envelope.Event{ID: "x", Source: "urn:a", Type: "t", Time: at, TimeSet: true}
		h, err := binaryHeaders(&e)
		if err != nil {
			t.Fatal(err)
		}
		if got := h.Get("ce-time"); got != ts {
			t.Errorf("time %s: ce-time %q, want %q", ts, got, ts)
		}
	}
	h, err := binaryHeaders(&envelope.Event{ID: "x", Source: "urn:a", Type: "t"})
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := h["ce-time"]; ok {
		t.Errorf("an event without a time has ce-time %q", v)
	}
}
