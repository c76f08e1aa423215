package envelope_test

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	ce "github.com/cloudevents/sdk-go/v2/event"
	"github.com/google/go-cmp/cmp"

	"github.com/eventlite/eventlite/envelope"
)

var fixedTime = time.Date(2024, 5, 17, 9, 30, 15, 123456789, time.UTC)

// interopEvents are events as eventlite stores them (prepared: compacted
// data, UTC time), covering every attribute and every kind of data.
func interopEvents(t *testing.T) map[string]envelope.Event {
	t.Helper()
	events := map[string]envelope.Event{
		"full": {
			ID:              "01HXZ5M8Q7J9K2V3W4X5Y6Z7A8",
			Source:          "https://orders.example.com/api",
			Type:            "com.example.order.placed",
			Stream:          "order-42",
			Time:            fixedTime,
			DataContentType: "application/json",
			DataSchema:      "https://schemas.example.com/order-placed/v1.json",
			// Pretty-printed on purpose: Prepare compacts it.
			Data:          []byte("{\n  \"id\": \"o-42\",\n  \"lines\": [\n    {\"sku\": \"A 1\", \"qty\": 2}\n  ],\n  \"total\": 42.5\n}\n"),
			Tenant:        "acme-eu.1",
			StreamVersion: 7,
			Position:      3000000000, // > 2^31: travels as a decimal string
			CorrelationID: "corr-1",
			CausationID:   "cause-1",
			Extensions: map[string]any{
				"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
				"attempt":     int32(3),
				"negative":    int32(-2147483648),
				"replayed":    true,
				"dryrun":      false,
			},
		},
		"minimal": {
			ID: "m-1", Source: "/orders", Type: "t",
		},
		"limits": {
			ID: "l-1", Source: "urn:example:limits", Type: "t", Time: fixedTime,
			StreamVersion: envelope.MaxStreamVersion,
			Position:      1<<63 - 1,
		},
		"text": {
			ID: "x-1", Source: "/notes", Type: "note.added", Time: fixedTime,
			DataContentType: "text/plain; charset=utf-8",
			Data:            []byte("line one\nline two\t\"quoted\" \u2028 ünïcödé"),
		},
		"binary": {
			ID: "b-1", Source: "/blobs", Type: "blob.stored", Time: fixedTime,
			DataContentType: "application/octet-stream",
			Data:            []byte{0x00, 0xff, 0xfe, '\n', 0x80, 'a'},
		},
		"binaryUTF8": {
			ID: "b-2", Source: "/blobs", Type: "blob.stored", Time: fixedTime,
			DataContentType: "application/octet-stream",
			Data:            []byte("plain bytes\n"),
		},
		"jsonScalar": {
			ID: "s-1", Source: "/s", Type: "t", Time: fixedTime,
			Data: []byte(`"just a string"`),
		},
		"hostileStream": {
			ID: "h-1", Source: "/s", Type: "t", Time: fixedTime,
			Stream: "'; DROP TABLE events;-- %_ \u65e5\u672c",
			Data:   []byte(`{"html":"</script><script>alert(1)</script>","ls":"\u2028"}`),
		},
	}
	for name, e := range events {
		if err := e.Prepare(fixedTime, 0); err != nil {
			t.Fatalf("%s: Prepare: %v", name, err)
		}
		events[name] = e
	}
	return events
}

// TestSDKReadsMarshalJSON: what MarshalJSON writes, sdk-go reads and
// validates, and converting sdk-go's event back gives the original.
func TestSDKReadsMarshalJSON(t *testing.T) {
	for name, want := range interopEvents(t) {
		t.Run(name, func(t *testing.T) {
			b, err := want.MarshalJSON()
			if err != nil {
				t.Fatal(err)
			}
			if bytes.ContainsAny(b, "\r\n") {
				t.Errorf("MarshalJSON output is not one line: %s", b)
			}
			if !json.Valid(b) {
				t.Fatalf("MarshalJSON output is not JSON: %s", b)
			}
			var parsed ce.Event
			if err := parsed.UnmarshalJSON(b); err != nil {
				t.Fatalf("sdk-go UnmarshalJSON: %v\n%s", err, b)
			}
			if err := parsed.Validate(); err != nil {
				t.Fatalf("sdk-go Validate: %v\n%s", err, b)
			}
			got, err := envelope.FromCloudEvent(parsed, 0)
			if err != nil {
				t.Fatalf("FromCloudEvent: %v", err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("MarshalJSON -> sdk-go -> FromCloudEvent (-want +got):\n%s", diff)
			}
			// And our decoder reads it back the same.
			again, err := envelope.DecodeJSON(b, 0)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, again); diff != "" {
				t.Errorf("MarshalJSON -> DecodeJSON (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPositionIsDecimalString(t *testing.T) {
	e := interopEvents(t)["full"]
	b, _ := e.MarshalJSON()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"position": "3000000000", "streamversion": float64(7), "tenant": "acme-eu.1", "attempt": float64(3)}
	got := map[string]any{"position": m["position"], "streamversion": m["streamversion"], "tenant": m["tenant"], "attempt": m["attempt"]}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("extension encoding (-want +got):\n%s", diff)
	}
	var parsed ce.Event
	if err := parsed.UnmarshalJSON(b); err != nil {
		t.Fatal(err)
	}
	if got := parsed.Extensions()["position"]; got != "3000000000" {
		t.Errorf("sdk-go sees position %#v, want the string \"3000000000\"", got)
	}
}

// TestCloudEventRoundTrip: ToCloudEvent -> FromCloudEvent is lossless, the
// sdk-go event validates, and sdk-go's own JSON encoding decodes back to
// the original with DecodeJSON.
func TestCloudEventRoundTrip(t *testing.T) {
	events := interopEvents(t)
	// Sources and schemas that url.Parse would print differently.
	odd := events["minimal"]
	odd.ID = "odd-1"
	odd.Source = "HTTPS://Example.COM/ä b"
	odd.DataSchema = "HTTPS://Schemas.Example.COM/v1"
	events["oddURIs"] = odd
	for name, want := range events {
		t.Run(name, func(t *testing.T) {
			c := want.ToCloudEvent()
			if err := c.Validate(); err != nil {
				t.Fatalf("sdk-go Validate: %v", err)
			}
			got, err := envelope.FromCloudEvent(c, 0)
			if err != nil {
				t.Fatalf("FromCloudEvent: %v", err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("ToCloudEvent -> FromCloudEvent (-want +got):\n%s", diff)
			}
			if name == "oddURIs" {
				return // sdk-go's JSON reader normalises such URIs itself
			}
			// c.MarshalJSON, not json.Marshal: encoding/json re-escapes a
			// Marshaler's output (<, >, & in data become \u003c...).
			b, err := c.MarshalJSON()
			if err != nil {
				t.Fatalf("sdk-go MarshalJSON: %v", err)
			}
			fromSDK, err := envelope.DecodeJSON(b, 0)
			if err != nil {
				t.Fatalf("DecodeJSON of sdk-go output: %v\n%s", err, b)
			}
			if diff := cmp.Diff(want, fromSDK); diff != "" {
				t.Errorf("ToCloudEvent -> sdk-go JSON -> DecodeJSON (-want +got):\n%s", diff)
			}
		})
	}
}

// TestFromCloudEventCompactsData: sdk-go keeps JSON data as it arrived;
// FromCloudEvent stores it compacted so the event encodes on one line.
func TestFromCloudEventCompactsData(t *testing.T) {
	in := "{\n  \"specversion\": \"1.0\",\n  \"id\": \"p-1\",\n  \"source\": \"/s\",\n  \"type\": \"t\",\n  \"datacontenttype\": \"application/json\",\n  \"data\": {\n    \"a\": [1, 2],\n    \"b\": \"x y\"\n  }\n}\n"
	var c ce.Event
	if err := c.UnmarshalJSON([]byte(in)); err != nil {
		t.Fatal(err)
	}
	e, err := envelope.FromCloudEvent(c, 0)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(`{"a":[1,2],"b":"x y"}`, string(e.Data)); diff != "" {
		t.Errorf("data (-want +got):\n%s", diff)
	}
	b, _ := e.MarshalJSON()
	if bytes.ContainsAny(b, "\r\n") {
		t.Errorf("not one line: %s", b)
	}
}

func TestFromCloudEventRefuses(t *testing.T) {
	tests := []struct {
		name  string
		edit  func(*ce.Event)
		field string
	}{
		{"spec 0.3", func(c *ce.Event) { c.SetSpecVersion("0.3") }, "specversion"},
		{"bad JSON data", func(c *ce.Event) {
			c.SetDataContentType("application/json")
			c.DataEncoded = []byte("{not json")
		}, "data"},
		{"position not a number", func(c *ce.Event) { c.SetExtension("position", "x") }, "position"},
		{"negative position", func(c *ce.Event) { c.SetExtension("position", "-1") }, "position"},
		{"streamversion float", func(c *ce.Event) {
			rawExtension(c, "streamversion", 1.5)
		}, "streamversion"},
		{"upper-case extension", func(c *ce.Event) {
			rawExtension(c, "MyExt", "x")
		}, "MyExt"},
		{"reserved extension", func(c *ce.Event) {
			rawExtension(c, "data", "x")
		}, "data"},
		{"bad tenant", func(c *ce.Event) { c.SetExtension("tenant", "a/b") }, "tenant"},
		{"subject with trailing space", func(c *ce.Event) {
			s := "order-1 "
			c.Context.(*ce.EventContextV1).Subject = &s
		}, "stream"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := ce.New()
			c.SetID("r-1")
			c.SetSource("/s")
			c.SetType("t")
			tt.edit(&c)
			_, err := envelope.FromCloudEvent(c, 0)
			checkField(t, err, tt.field)
		})
	}
}

// rawExtension sets an extension without sdk-go's checks, as a hand-built
// or foreign event.Event may carry it.
func rawExtension(c *ce.Event, name string, v any) {
	ctx := c.Context.(*ce.EventContextV1)
	if ctx.Extensions == nil {
		ctx.Extensions = make(map[string]any)
	}
	ctx.Extensions[name] = v
}
