package envelope_test

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/oklog/ulid/v2"

	"github.com/eventlite/eventlite/envelope"
)

type orderPlaced struct {
	ID    string  `json:"id"`
	Total float64 `json:"total"`
}

func TestNew(t *testing.T) {
	tests := []struct {
		name string
		v    any
		want string // data; "<nil>" for none
	}{
		{"struct", orderPlaced{ID: "o-1", Total: 42}, `{"id":"o-1","total":42}`},
		{"pointer", &orderPlaced{ID: "o-2"}, `{"id":"o-2","total":0}`},
		{"raw message", json.RawMessage(`{"a":1}`), `{"a":1}`},
		{"bytes", []byte(`[1,2]`), `[1,2]`},
		{"string", "hi", `"hi"`},
		{"nil", nil, "<nil>"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := envelope.New("order.placed", tt.v)
			if err != nil {
				t.Fatal(err)
			}
			got := "<nil>"
			if e.Data != nil {
				got = string(e.Data)
			}
			want := envelope.Event{Type: "order.placed", DataContentType: envelope.DefaultContentType}
			gotHead := envelope.Event{Type: e.Type, DataContentType: e.DataContentType}
			if diff := cmp.Diff(want, gotHead); diff != "" {
				t.Errorf("attributes (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("data (-want +got):\n%s", diff)
			}
		})
	}
	t.Run("unencodable", func(t *testing.T) {
		_, err := envelope.New("t", math.Inf(1))
		checkField(t, err, "data")
		_, err = envelope.New("t", make(chan int))
		checkField(t, err, "data")
	})
}

func TestPrepareFillsDefaults(t *testing.T) {
	now := time.Date(2024, 5, 17, 11, 30, 0, 5, time.FixedZone("CEST", 2*3600))
	e, err := envelope.New("order.placed", json.RawMessage("{\n\t\"id\" : \"o 1\",\r\n \"n\": [ 1 , 2 ]\n}"))
	if err != nil {
		t.Fatal(err)
	}
	e.Source = "/orders"
	e.DataContentType = ""
	if err := e.Prepare(now, 0); err != nil {
		t.Fatal(err)
	}
	id, err := ulid.ParseStrict(e.ID)
	if err != nil {
		t.Errorf("id %q is not a ULID: %v", e.ID, err)
	}
	if e.Time.Location() != time.UTC || !e.Time.Equal(now) {
		t.Errorf("time %v, want %v in UTC", e.Time, now.UTC())
	}
	if ms := time.UnixMilli(int64(id.Time())); ms.After(time.Now()) || time.Since(ms) > time.Hour {
		t.Errorf("ULID time %v is not about now", ms)
	}
	if e.DataContentType != "application/json" {
		t.Errorf("content type %q, want application/json", e.DataContentType)
	}
	if diff := cmp.Diff(`{"id":"o 1","n":[1,2]}`, string(e.Data)); diff != "" {
		t.Errorf("data not compacted (-want +got):\n%s", diff)
	}

	// Ids are unique and, made in order, sort in order.
	var prev string
	for range 100 {
		e := envelope.Event{Source: "/s", Type: "t"}
		if err := e.Prepare(now, 0); err != nil {
			t.Fatal(err)
		}
		if e.ID <= prev {
			t.Fatalf("id %q not after %q", e.ID, prev)
		}
		prev = e.ID
	}
}

func TestPrepareKeepsWhatIsGiven(t *testing.T) {
	given := time.Date(2020, 1, 2, 3, 4, 5, 6, time.FixedZone("X", -5*3600))
	e := envelope.Event{
		ID: "my-id", Source: "/s", Type: "t", Time: given,
		DataContentType: "text/plain",
		Data:            []byte("  text\n with space  "),
	}
	if err := e.Prepare(time.Now(), 0); err != nil {
		t.Fatal(err)
	}
	want := envelope.Event{
		ID: "my-id", Source: "/s", Type: "t", Time: given.UTC(),
		DataContentType: "text/plain",
		Data:            []byte("  text\n with space  "),
	}
	if diff := cmp.Diff(want, e); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if e.Time.Location() != time.UTC {
		t.Errorf("time %v not converted to UTC", e.Time)
	}
}

func TestPrepareInvalidJSONData(t *testing.T) {
	for _, data := range []string{"{", "{\n", "not json", "", `{"a":1}x`, "{\"a\":\n1}}"} {
		for _, ct := range []string{"", "application/json", "application/cloudevents+json; charset=utf-8", "text/json"} {
			t.Run(ct+" "+data, func(t *testing.T) {
				e := envelope.Event{Source: "/s", Type: "t", DataContentType: ct, Data: []byte(data)}
				checkField(t, e.Prepare(time.Now(), 0), "data")
			})
		}
	}
}

// jsonOfSize returns a compact JSON string value of exactly n bytes.
func jsonOfSize(n int) []byte {
	return []byte(`"` + strings.Repeat("a", n-2) + `"`)
}

func TestDataLimit(t *testing.T) {
	const def = envelope.DefaultMaxDataBytes
	if def != 512*1024 {
		t.Fatalf("DefaultMaxDataBytes = %d, want 512 KiB", def)
	}
	// Pretty data whose compact form is exactly the limit: the limit
	// applies to the data as stored.
	pretty := append([]byte("[\n  "), jsonOfSize(def-2)...)
	pretty = append(pretty, "\n]"...)

	tests := []struct {
		name    string
		data    []byte
		ct      string
		maxData int
		size    int // 0: accepted; else the TooLargeError size
		limit   int
	}{
		{"at default limit", jsonOfSize(def), "", 0, 0, 0},
		{"one over default", jsonOfSize(def + 1), "", 0, def + 1, def},
		{"pretty, compacts to the limit", pretty, "", 0, 0, 0},
		{"binary at limit", bytes.Repeat([]byte{0xff}, def), "application/octet-stream", 0, 0, 0},
		{"binary over limit", bytes.Repeat([]byte{0xff}, def+1), "application/octet-stream", 0, def + 1, def},
		{"at custom limit", jsonOfSize(100), "", 100, 0, 0},
		{"over custom limit", jsonOfSize(101), "", 100, 101, 100},
		{"far over custom limit", jsonOfSize(10 << 10), "", 100, 10 << 10, 100},
		{"custom limit above default", jsonOfSize(def + 1), "", def + 1, 0, 0},
		{"negative: no limit", jsonOfSize(2 << 20), "", -1, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := envelope.Event{Source: "/s", Type: "t", DataContentType: tt.ct, Data: tt.data}
			err := e.Prepare(fixedTime, tt.maxData)
			if tt.size == 0 {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
			} else {
				checkTooLarge(t, err, "data", tt.size, tt.limit)
				if err != nil && !strings.Contains(err.Error(), "data") {
					t.Errorf("message %q does not name the field", err)
				}
			}

			// DecodeJSON applies the same limit to the stored form.
			e.ID = "x"
			b, _ := e.MarshalJSON()
			_, err = envelope.DecodeJSON(b, tt.maxData)
			if tt.size == 0 {
				if err != nil {
					t.Fatalf("DecodeJSON refused: %v", err)
				}
			} else {
				checkTooLarge(t, err, "data", tt.size, tt.limit)
			}
		})
	}
}

func TestTooLargeErrorMessage(t *testing.T) {
	e := envelope.Event{Source: "/s", Type: "t", Data: jsonOfSize(11)}
	err := e.Prepare(fixedTime, 10)
	want := "event: data is 11 bytes, over the limit of 10 bytes: store large content elsewhere and reference it from the event"
	if err == nil || err.Error() != want {
		t.Errorf("got %v, want %q", err, want)
	}
}

func TestValidate(t *testing.T) {
	valid := func() envelope.Event {
		return envelope.Event{
			ID: "id-1", Source: "https://example.com/s", Type: "t", Stream: "s-1",
			Time: fixedTime, DataContentType: "application/json", DataSchema: "https://example.com/schema",
			Data: []byte(`{}`), Tenant: "acme", StreamVersion: 1, Position: 1,
			CorrelationID: "c", CausationID: "k",
			Extensions: map[string]any{"s": "x", "i": int32(1), "b": true},
		}
	}
	long := strings.Repeat("x", envelope.MaxAttributeBytes+1)
	tests := []struct {
		name     string
		edit     func(*envelope.Event)
		field    string // "" means valid
		tooLarge bool
	}{
		{"valid", func(*envelope.Event) {}, "", false},
		{"no optional attributes", func(e *envelope.Event) {
			*e = envelope.Event{ID: "i", Source: "s", Type: "t"}
		}, "", false},
		{"relative source", func(e *envelope.Event) { e.Source = "#frag" }, "", false},
		{"max stream version", func(e *envelope.Event) { e.StreamVersion = envelope.MaxStreamVersion }, "", false},
		{"attribute at max length", func(e *envelope.Event) { e.ID = long[1:] }, "", false},
		{"year 0000", func(e *envelope.Event) { e.Time = time.Date(0, 6, 1, 0, 0, 0, 0, time.UTC) }, "", false},
		{"year 9999", func(e *envelope.Event) { e.Time = time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC) }, "", false},
		{"empty id", func(e *envelope.Event) { e.ID = "" }, "id", false},
		{"empty source", func(e *envelope.Event) { e.Source = "" }, "source", false},
		{"bad source", func(e *envelope.Event) { e.Source = "http://[::1" }, "source", false},
		{"empty type", func(e *envelope.Event) { e.Type = "" }, "type", false},
		{"NUL in type", func(e *envelope.Event) { e.Type = "a\x00b" }, "type", false},
		{"invalid UTF-8 id", func(e *envelope.Event) { e.ID = "a\xffb" }, "id", false},
		{"long id", func(e *envelope.Event) { e.ID = long }, "id", true},
		{"long source", func(e *envelope.Event) { e.Source = long }, "source", true},
		{"bad stream", func(e *envelope.Event) { e.Stream = " s" }, "stream", false},
		{"year -1", func(e *envelope.Event) { e.Time = time.Date(-1, 6, 1, 0, 0, 0, 0, time.UTC) }, "time", false},
		{"year 10000", func(e *envelope.Event) { e.Time = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC) }, "time", false},
		{"content type without subtype", func(e *envelope.Event) { e.DataContentType = "xyz" }, "datacontenttype", false},
		{"content type empty subtype", func(e *envelope.Event) { e.DataContentType = "text/" }, "datacontenttype", false},
		{"content type bad params", func(e *envelope.Event) { e.DataContentType = "text/plain; =x" }, "datacontenttype", false},
		{"relative dataschema", func(e *envelope.Event) { e.DataSchema = "/schema" }, "dataschema", false},
		{"bad tenant", func(e *envelope.Event) { e.Tenant = "a b" }, "tenant", false},
		{"negative stream version", func(e *envelope.Event) { e.StreamVersion = -1 }, "streamversion", false},
		{"stream version over 2^31-1", func(e *envelope.Event) { e.StreamVersion = envelope.MaxStreamVersion + 1 }, "streamversion", false},
		{"negative position", func(e *envelope.Event) { e.Position = -1 }, "position", false},
		{"NUL correlation id", func(e *envelope.Event) { e.CorrelationID = "\x00" }, "correlationid", false},
		{"long causation id", func(e *envelope.Event) { e.CausationID = long }, "causationid", true},
		{"upper-case extension", func(e *envelope.Event) { e.Extensions["Ext"] = "x" }, "Ext", false},
		{"dotted extension", func(e *envelope.Event) { e.Extensions["a.b"] = "x" }, "a.b", false},
		{"empty extension name", func(e *envelope.Event) { e.Extensions[""] = "x" }, "extension", false},
		{"reserved extension", func(e *envelope.Event) { e.Extensions["subject"] = "x" }, "subject", false},
		{"eventlite extension in map", func(e *envelope.Event) { e.Extensions["position"] = "1" }, "position", false},
		{"float extension", func(e *envelope.Event) { e.Extensions["f"] = 1.5 }, "f", false},
		{"int64 extension", func(e *envelope.Event) { e.Extensions["n"] = int64(1) }, "n", false},
		{"map extension", func(e *envelope.Event) { e.Extensions["m"] = map[string]any{} }, "m", false},
		{"long extension value", func(e *envelope.Event) { e.Extensions["l"] = long }, "l", true},
		{"JSON content type, bad JSON", func(e *envelope.Event) { e.Data = []byte("{") }, "data", false},
		{"default content type, bad JSON", func(e *envelope.Event) {
			e.DataContentType = ""
			e.Data = []byte("nope")
		}, "data", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := valid()
			tt.edit(&e)
			err := e.Validate(0)
			switch {
			case tt.field == "":
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
			case tt.tooLarge:
				checkTooLarge(t, err, tt.field, envelope.MaxAttributeBytes+1, envelope.MaxAttributeBytes)
			default:
				checkField(t, err, tt.field)
			}
		})
	}
}

func TestValidateStream(t *testing.T) {
	tests := []struct {
		stream string
		ok     bool
	}{
		{"order-42", true},
		{"'; DROP TABLE events;--", true},
		{"%", true},
		{"_", true},
		{"%_%", true},
		{`a"b\c`, true},
		{"naïve-日本語-🎉", true},
		{"inner space and\ttab", false}, // a tab is a control character
		{"x", true},
		{strings.Repeat("s", envelope.MaxStreamBytes), true},
		{strings.Repeat("é", envelope.MaxStreamBytes/2), true}, // 254 bytes

		{"", false},
		{strings.Repeat("s", envelope.MaxStreamBytes+1), false},
		{strings.Repeat("é", envelope.MaxStreamBytes/2+1), false}, // 256 bytes, 128 runes
		{strings.Repeat("s", 10_000), false},
		{" leading", false},
		{"trailing ", false},
		{"\tleading tab", false},
		{"trailing newline\n", false},
		{"\u00a0nbsp", false},
		{"ideographic space\u3000", false},
		{" ", false},
		{"nul\x00inside", false},
		{"\x00", false},
		{"bad\xffutf8", false},
		{"\xc3", false},
	}
	for _, tt := range tests {
		name := tt.stream
		if len(name) > 40 {
			name = name[:40]
		}
		t.Run(name, func(t *testing.T) {
			err := envelope.ValidateStream(tt.stream)
			if tt.ok {
				if err != nil {
					t.Fatalf("refused %q: %v", tt.stream, err)
				}
				return
			}
			checkField(t, err, "stream")
			if tt.stream != "" { // an empty Stream is an absent subject
				// Validate refuses the same stream as a subject.
				e := envelope.Event{ID: "i", Source: "/s", Type: "t", Stream: tt.stream}
				checkField(t, e.Validate(0), "stream")
			}
		})
	}
}

func TestValidateTenant(t *testing.T) {
	tests := []struct {
		tenant string
		ok     bool
	}{
		{"acme", true},
		{"a", true},
		{"A-Z_a-z.0-9", true},
		{"...", true},
		{strings.Repeat("t", 64), true},

		{"", false},
		{strings.Repeat("t", 65), false},
		{"has space", false},
		{" acme", false},
		{"acme\n", false},
		{"a/b", false},
		{`a\b`, false},
		{"a:b", false},
		{"a%b", false},
		{"a'b", false},
		{"ünïcode", false},
		{"日本", false},
		{"nul\x00", false},
	}
	for _, tt := range tests {
		t.Run(tt.tenant, func(t *testing.T) {
			err := envelope.ValidateTenant(tt.tenant)
			if tt.ok {
				if err != nil {
					t.Fatalf("refused %q: %v", tt.tenant, err)
				}
				return
			}
			checkField(t, err, "tenant")
			if tt.tenant != "" {
				e := envelope.Event{ID: "i", Source: "/s", Type: "t", Tenant: tt.tenant}
				checkField(t, e.Validate(0), "tenant")
			}
		})
	}
}

func TestIsJSONContentType(t *testing.T) {
	tests := map[string]bool{
		"":                                   true,
		"application/json":                   true,
		"Application/JSON; charset=utf-8":    true,
		"text/json":                          true,
		"application/cloudevents+json":       true,
		"application/vnd.example.order+json": true,
		"text/plain":                         false,
		"application/octet-stream":           false,
		"application/jsonx":                  false,
		"application/json-seq":               false,
	}
	for ct, want := range tests {
		if got := envelope.IsJSONContentType(ct); got != want {
			t.Errorf("IsJSONContentType(%q) = %v, want %v", ct, got, want)
		}
	}
}

func TestClone(t *testing.T) {
	e := envelope.Event{ID: "i", Data: []byte(`{"a":1}`), Extensions: map[string]any{"x": "1"}}
	c := e.Clone()
	if diff := cmp.Diff(e, c); diff != "" {
		t.Fatalf("clone differs (-want +got):\n%s", diff)
	}
	c.Data[2] = 'b'
	c.Extensions["x"] = "2"
	if string(e.Data) != `{"a":1}` || e.Extensions["x"] != "1" {
		t.Errorf("clone shares memory with the original: %s %v", e.Data, e.Extensions)
	}
}

func TestErrorMessages(t *testing.T) {
	tests := []struct {
		err  error
		want string
	}{
		{&envelope.InvalidError{Index: -1, Field: "id", Reason: "required and missing"}, "invalid event: id: required and missing"},
		{&envelope.InvalidError{Index: 3, Field: "time", Reason: "bad"}, "invalid event 3: time: bad"},
		{&envelope.TooLargeError{Index: 2, Field: "data", Size: 11, Limit: 10}, "event 2: data is 11 bytes, over the limit of 10 bytes: store large content elsewhere and reference it from the event"},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("got %q, want %q", got, tt.want)
		}
	}
}
