package envelope_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/eventlite/eventlite/envelope"
)

// ev returns a minimal valid structured event with the given id and extra
// members (each `"name":value`).
func ev(id string, extra ...string) string {
	s := `{"specversion":"1.0","id":"` + id + `","source":"/s","type":"t"`
	for _, x := range extra {
		s += "," + x
	}
	return s + "}"
}

func ids(evs []envelope.Event) []string {
	out := []string{}
	for _, e := range evs {
		out = append(out, e.ID)
	}
	return out
}

func TestDecodeJSON(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want envelope.Event
	}{
		{"minimal", ev("a"), envelope.Event{ID: "a", Source: "/s", Type: "t"}},
		{"pretty-printed", "{\n  \"specversion\": \"1.0\",\n  \"id\": \"p\",\n  \"source\": \"/s\",\n  \"type\": \"t\",\n  \"data\": {\n    \"a\": [ 1, 2 ],\n    \"s\": \"keep  these\\nspaces\"\n  }\n}\n",
			envelope.Event{ID: "p", Source: "/s", Type: "t", Data: []byte(`{"a":[1,2],"s":"keep  these\nspaces"}`)}},
		{"eventlite extensions", ev("e", `"subject":"order-1"`, `"tenant":"acme"`, `"streamversion":3`, `"position":"3000000000"`, `"correlationid":"c"`, `"causationid":"k"`),
			envelope.Event{ID: "e", Source: "/s", Type: "t", Stream: "order-1", Tenant: "acme", StreamVersion: 3, Position: 3000000000, CorrelationID: "c", CausationID: "k"}},
		{"integers as numbers or strings", ev("n", `"streamversion":"2147483647"`, `"position":4`),
			envelope.Event{ID: "n", Source: "/s", Type: "t", StreamVersion: 2147483647, Position: 4}},
		{"nulls are absent", ev("z", `"subject":null`, `"tenant":null`, `"position":null`, `"data":null`, `"data_base64":null`, `"ext":null`),
			envelope.Event{ID: "z", Source: "/s", Type: "t"}},
		{"time to UTC", ev("t", `"time":"2024-05-17T11:30:15.5+02:00"`),
			envelope.Event{ID: "t", Source: "/s", Type: "t", Time: time.Date(2024, 5, 17, 9, 30, 15, 5e8, time.UTC)}},
		{"extensions", ev("x", `"i":-2147483648`, `"j":2147483647`, `"b":false`, `"s":""`, `"u":"https://x"`),
			envelope.Event{ID: "x", Source: "/s", Type: "t", Extensions: map[string]any{"i": int32(-2147483648), "j": int32(2147483647), "b": false, "s": "", "u": "https://x"}}},
		{"text data", ev("d", `"datacontenttype":"text/plain"`, `"data":"a\nb"`),
			envelope.Event{ID: "d", Source: "/s", Type: "t", DataContentType: "text/plain", Data: []byte("a\nb")}},
		{"base64 data", ev("b", `"datacontenttype":"application/octet-stream"`, `"data_base64":"AP8="`),
			envelope.Event{ID: "b", Source: "/s", Type: "t", DataContentType: "application/octet-stream", Data: []byte{0, 0xff}}},
		{"base64 JSON data is compacted", ev("j", `"data_base64":"eyAiYSI6CjEgfQ=="`), // "{ \"a\":\n1 }"
			envelope.Event{ID: "j", Source: "/s", Type: "t", Data: []byte(`{"a":1}`)}},
		{"JSON string data", ev("s", `"data":"hi"`),
			envelope.Event{ID: "s", Source: "/s", Type: "t", Data: []byte(`"hi"`)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := envelope.DecodeJSON([]byte(tt.in), 0)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if !got.Time.IsZero() && got.Time.Location() != time.UTC {
				t.Errorf("time %v not UTC", got.Time)
			}
			// UnmarshalJSON is DecodeJSON with the default limit.
			var u envelope.Event
			if err := json.Unmarshal([]byte(tt.in), &u); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, u); diff != "" {
				t.Errorf("json.Unmarshal (-want +got):\n%s", diff)
			}
			b, _ := got.MarshalJSON()
			if bytes.ContainsAny(b, "\r\n") {
				t.Errorf("MarshalJSON output is not one line: %s", b)
			}
		})
	}
}

func TestDecodeJSONRefuses(t *testing.T) {
	tests := []struct {
		name  string
		in    string
		field string
	}{
		{"null", `null`, "event"},
		{"array", `[]`, "event"},
		{"string", `"x"`, "event"},
		{"empty", ``, "event"},
		{"truncated", `{"specversion":"1.0"`, "event"},
		{"trailing garbage", ev("a") + `x`, "event"},
		{"two events", ev("a") + ev("b"), "event"},
		{"negative position", ev("a", `"position":-1`), "position"},
		{"fractional position", ev("a", `"position":1.5`), "position"},
		{"position overflow", ev("a", `"position":"99999999999999999999"`), "position"},
		{"streamversion over 2^31-1", ev("a", `"streamversion":2147483648`), "streamversion"},
		{"streamversion bool", ev("a", `"streamversion":true`), "streamversion"},
		{"extension over int32", ev("a", `"big":2147483648`), "big"},
		{"extension object", ev("a", `"obj":{}`), "obj"},
		{"extension array", ev("a", `"arr":[1]`), "arr"},
		{"extension float", ev("a", `"f":1.0`), "f"},
		{"extension exponent", ev("a", `"f":1e3`), "f"},
		{"empty extension name", ev("a", `"":"x"`), "extension"},
		{"NUL in extension", ev("a", `"x":"a\u0000b"`), "x"},
		{"NUL in id", `{"specversion":"1.0","id":"a\u0000","source":"/s","type":"t"}`, "id"},
		{"tenant with slash", ev("a", `"tenant":"a/b"`), "tenant"},
		{"subject with trailing space", ev("a", `"subject":"s "`), "stream"},
		{"subject number", ev("a", `"subject":1`), "subject"},
		{"time with year 10000 in UTC", ev("a", `"time":"9999-12-31T23:30:00-01:00"`), "time"},
		{"time before year 0 in UTC", ev("a", `"time":"0000-01-01T00:30:00+01:00"`), "time"},
		{"bad base64", ev("a", `"data_base64":"!!"`), "data_base64"},
		{"base64 not a string", ev("a", `"data_base64":1`), "data_base64"},
		{"base64 not JSON for JSON type", ev("a", `"data_base64":"AP8="`), "data"},
		{"text data not a string", ev("a", `"datacontenttype":"text/plain"`, `"data":{"a":1}`), "data"},
		{"relative dataschema", ev("a", `"dataschema":"/x"`), "dataschema"},
		{"specversion number", `{"specversion":1.0,"id":"a","source":"/s","type":"t"}`, "specversion"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := envelope.DecodeJSON([]byte(tt.in), 0)
			checkField(t, err, tt.field)
			if diff := cmp.Diff(envelope.Event{}, got); diff != "" {
				t.Errorf("returned an event with its error (-want +got):\n%s", diff)
			}
			var ie *envelope.InvalidError
			if errors.As(err, &ie) && ie.Index != -1 {
				t.Errorf("index %d for a single event, want -1", ie.Index)
			}
		})
	}
}

func TestDecodeBatchJSON(t *testing.T) {
	evs, err := envelope.DecodeBatchJSON([]byte("[\n"+ev("a")+",\n  "+ev("b")+"\n]"), 0)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"a", "b"}, ids(evs)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	evs, err = envelope.DecodeBatchJSON([]byte(`[]`), 0)
	if err != nil || len(evs) != 0 {
		t.Errorf("empty batch: %v, %v", evs, err)
	}

	tests := []struct {
		name  string
		in    string
		field string
		index int
	}{
		{"not an array", ev("a"), "batch", -1},
		{"garbage", `[1,`, "batch", -1},
		{"bad third", "[" + ev("a") + "," + ev("b") + "," + ev("", `"x":1`) + "]", "id", 2},
		{"number in batch", "[" + ev("a") + ",7]", "event", 1},
		{"nested batch", "[[" + ev("a") + "]]", "event", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			evs, err := envelope.DecodeBatchJSON([]byte(tt.in), 0)
			if evs != nil {
				t.Errorf("returned %d events with its error", len(evs))
			}
			checkField(t, err, tt.field)
			var ie *envelope.InvalidError
			if errors.As(err, &ie) && ie.Index != tt.index {
				t.Errorf("index %d, want %d", ie.Index, tt.index)
			}
		})
	}

	t.Run("too large carries the index", func(t *testing.T) {
		in := "[" + ev("a") + "," + ev("b", `"data":`+string(jsonOfSize(11))) + "]"
		_, err := envelope.DecodeBatchJSON([]byte(in), 10)
		checkTooLarge(t, err, "data", 11, 10)
		var te *envelope.TooLargeError
		if errors.As(err, &te) && te.Index != 1 {
			t.Errorf("index %d, want 1", te.Index)
		}
	})
}

func TestDecodeSequence(t *testing.T) {
	pretty := "{\n  \"specversion\": \"1.0\",\n  \"id\": \"p\",\n  \"source\": \"/s\",\n  \"type\": \"t\",\n  \"data\": {\n    \"k\": [\n      1\n    ]\n  }\n}"
	tests := []struct {
		name string
		in   string
		want []string
	}{
		{"empty", "", []string{}},
		{"only white space", " \n\t\r\n  ", []string{}},
		{"one", ev("a"), []string{"a"}},
		{"JSON Lines", ev("a") + "\n" + ev("b") + "\n" + ev("c") + "\n", []string{"a", "b", "c"}},
		{"no separator", ev("a") + ev("b"), []string{"a", "b"}},
		{"arbitrary white space", "\n\n  " + ev("a") + " \t\r\n\n " + ev("b") + "\t", []string{"a", "b"}},
		{"pretty-printed", pretty + "\n\n" + pretty, []string{"p", "p"}},
		{"batch mixed with single events", ev("a") + "\n[" + ev("b") + ",\n" + ev("c") + "]\n" + ev("d") + "\n[]\n[" + ev("e") + "]", []string{"a", "b", "c", "d", "e"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := envelope.DecodeSequence(strings.NewReader(tt.in), 0)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, ids(got)); diff != "" {
				t.Errorf("ids (-want +got):\n%s", diff)
			}
			for _, e := range got {
				if e.ID == "p" && string(e.Data) != `{"k":[1]}` {
					t.Errorf("pretty data not compacted: %q", e.Data)
				}
			}
		})
	}

	errTests := []struct {
		name  string
		in    string
		field string
		index int
	}{
		{"garbage", "garbage", "event", 0},
		{"garbage after two", ev("a") + "\n" + ev("b") + "\n}{", "event", 2},
		{"garbage after a batch", "[" + ev("a") + "," + ev("b") + "]\nnope", "event", 2},
		{"truncated", ev("a") + "\n{\"specversion\":", "event", 1},
		{"invalid event", ev("a") + "\n" + ev("b", `"time":"lunchtime"`), "time", 1},
		{"invalid event in a batch", ev("a") + "\n[" + ev("b") + "," + ev("c", `"tenant":"a b"`) + "]", "tenant", 2},
		{"non-object in a batch", ev("a") + "[" + ev("b") + ",\"x\"]", "event", 2},
		{"null", ev("a") + " null", "event", 1},
		{"number", "42", "event", 0},
	}
	for _, tt := range errTests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := envelope.DecodeSequence(strings.NewReader(tt.in), 0)
			if got != nil {
				t.Errorf("returned %d events with its error", len(got))
			}
			checkField(t, err, tt.field)
			var ie *envelope.InvalidError
			if errors.As(err, &ie) && ie.Index != tt.index {
				t.Errorf("index %d, want %d (%v)", ie.Index, tt.index, err)
			}
		})
	}
}

func TestMarshalJSON(t *testing.T) {
	tests := []struct {
		name string
		e    envelope.Event
		want string
	}{
		{"minimal", envelope.Event{ID: "a", Source: "/s", Type: "t"},
			`{"specversion":"1.0","id":"a","source":"/s","type":"t"}`},
		{"fixed attribute order, sorted extensions",
			envelope.Event{
				ID: "a", Source: "/s", Type: "t", Stream: "st", Time: time.Date(2024, 1, 2, 4, 4, 5, 600, time.FixedZone("", 3600)),
				DataContentType: "application/json", DataSchema: "https://x/s", Data: []byte(`{"k":1}`),
				Tenant: "acme", StreamVersion: 2, Position: 3000000000, CorrelationID: "c", CausationID: "k",
				Extensions: map[string]any{"zz": "z", "aa": int32(-1), "mm": true},
			},
			`{"specversion":"1.0","id":"a","source":"/s","type":"t","subject":"st","time":"2024-01-02T03:04:05.0000006Z","datacontenttype":"application/json","dataschema":"https://x/s","tenant":"acme","streamversion":2,"position":"3000000000","correlationid":"c","causationid":"k","aa":-1,"mm":true,"zz":"z","data":{"k":1}}`},
		{"escaping", envelope.Event{ID: "q\"\\\n\r\t\x01\u2028\u2029é", Source: "/s", Type: "t"},
			`{"specversion":"1.0","id":"q\"\\\n\r\t\u0001\u2028\u2029é","source":"/s","type":"t"}`},
		{"invalid UTF-8 in a string", envelope.Event{ID: "a\xffb", Source: "/s", Type: "t"},
			`{"specversion":"1.0","id":"a\ufffdb","source":"/s","type":"t"}`},
		{"uncompacted JSON data", envelope.Event{ID: "a", Source: "/s", Type: "t", Data: []byte("{\n \"a\" : [ 1 ]\r\n}\n")},
			`{"specversion":"1.0","id":"a","source":"/s","type":"t","data":{"a":[1]}}`},
		{"text data", envelope.Event{ID: "a", Source: "/s", Type: "t", DataContentType: "text/plain", Data: []byte("x\ny")},
			`{"specversion":"1.0","id":"a","source":"/s","type":"t","datacontenttype":"text/plain","data":"x\ny"}`},
		{"binary data", envelope.Event{ID: "a", Source: "/s", Type: "t", DataContentType: "image/png", Data: []byte{0x89, 'P', 'N', 'G'}},
			`{"specversion":"1.0","id":"a","source":"/s","type":"t","datacontenttype":"image/png","data_base64":"iVBORw=="}`},
		{"empty text data", envelope.Event{ID: "a", Source: "/s", Type: "t", DataContentType: "text/plain", Data: []byte{}},
			`{"specversion":"1.0","id":"a","source":"/s","type":"t","datacontenttype":"text/plain","data":""}`},
		{"zero values omitted", envelope.Event{ID: "a", Source: "/s", Type: "t", StreamVersion: 0, Position: 0, Extensions: map[string]any{}},
			`{"specversion":"1.0","id":"a","source":"/s","type":"t"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := tt.e.MarshalJSON()
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, string(b)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if !json.Valid(b) {
				t.Errorf("not valid JSON: %s", b)
			}
			// AppendJSON appends to what is there.
			ab := tt.e.AppendJSON([]byte("prefix "))
			if string(ab) != "prefix "+tt.want {
				t.Errorf("AppendJSON = %s", ab)
			}
		})
	}
}

// TestMarshalDecodeRoundTrip: decode -> MarshalJSON -> decode is stable and
// MarshalJSON is deterministic.
func TestMarshalDecodeRoundTrip(t *testing.T) {
	for name, e := range interopEvents(t) {
		t.Run(name, func(t *testing.T) {
			b1, _ := e.MarshalJSON()
			d, err := envelope.DecodeJSON(b1, 0)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(e, d); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			b2, _ := d.MarshalJSON()
			if !bytes.Equal(b1, b2) {
				t.Errorf("encodings differ:\n%s\n%s", b1, b2)
			}
		})
	}
}

func TestDecodeTime(t *testing.T) {
	valid := map[string]time.Time{
		"2018-04-05T17:31:00Z":                time.Date(2018, 4, 5, 17, 31, 0, 0, time.UTC),
		"2018-04-05t17:31:00z":                time.Date(2018, 4, 5, 17, 31, 0, 0, time.UTC), // RFC 3339 allows lower case
		"2018-04-05T17:31:00.5+02:00":         time.Date(2018, 4, 5, 15, 31, 0, 5e8, time.UTC),
		"2018-04-05T17:31:00.123456789-00:30": time.Date(2018, 4, 5, 18, 1, 0, 123456789, time.UTC),
		"2018-04-05T17:31:00.1234567891Z":     time.Date(2018, 4, 5, 17, 31, 0, 123456789, time.UTC),
		"2018-04-05T17:31:00+23:59":           time.Date(2018, 4, 4, 17, 32, 0, 0, time.UTC),
		"2024-02-29T23:59:59Z":                time.Date(2024, 2, 29, 23, 59, 59, 0, time.UTC),
		"0000-01-01T00:00:00Z":                time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC),
		"9999-12-31T23:59:59.999999999Z":      time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC),
	}
	for in, want := range valid {
		t.Run(in, func(t *testing.T) {
			e, err := envelope.DecodeJSON([]byte(ev("a", `"time":"`+in+`"`)), 0)
			if err != nil {
				t.Fatal(err)
			}
			if !e.Time.Equal(want) || e.Time.Location() != time.UTC {
				t.Errorf("got %v, want %v in UTC", e.Time, want)
			}
		})
	}
	invalid := []string{
		"", "lunchtime", "2018-04-05", "2018-04-05T17:31Z", "2018-04-05 17:31:00Z",
		"2018-04-05T7:31:00Z", "2018-4-05T17:31:00Z", "2018-04-05T17:31:00,5Z", "2018-04-05T17:31:00.Z",
		"2018-04-05T17:31:00", "2018-04-05T17:31:00+05", "2018-04-05T17:31:00+0500",
		"2018-04-05T17:31:00+24:00", "2018-04-05T17:31:00+00:60", "2018-04-05T17:31:00+25:00",
		"2018-04-05T24:00:00Z", "2018-04-05T17:60:00Z", "2018-04-05T17:31:61Z",
		"2018-02-30T17:31:00Z", "2018-13-01T00:00:00Z", "+2018-04-05T17:31:00Z",
		"2018-04-05T17:31:00Z ", " 2018-04-05T17:31:00Z", "2018-04-05T17:31:00Z\n",
		"２018-04-05T17:31:00Z",
	}
	for _, in := range invalid {
		t.Run("invalid "+in, func(t *testing.T) {
			b, _ := json.Marshal(in)
			_, err := envelope.DecodeJSON([]byte(ev("a", `"time":`+string(b))), 0)
			checkField(t, err, "time")
		})
	}
}
