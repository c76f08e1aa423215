package envelope_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	cloudevent "github.com/cloudevents/sdk-go/v2/event"

	"github.com/eventlite/eventlite/envelope"
)

// extremeTimes are instants RFC 3339 can write that Unix nanoseconds in
// an int64 cannot all hold, and the edges of the ones they can.
var extremeTimes = []string{
	"0001-01-01T00:00:00Z",
	"0001-01-01T00:00:00.000000001Z",
	"1677-09-21T00:12:43.145224191Z", // one before int64 nanoseconds begin
	"1677-09-21T00:12:43.145224192Z", // the first instant they hold
	"1970-01-01T00:00:00Z",
	"2262-04-11T23:47:16.854775807Z", // the last instant they hold
	"2262-04-12T00:00:00Z",
	"9999-12-31T23:59:59.999999999Z",
}

func mustTime(t *testing.T, s string) time.Time {
	t.Helper()
	tm, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatal(err)
	}
	return tm.UTC()
}

func TestExtremeTimesRoundTrip(t *testing.T) {
	for _, ts := range extremeTimes {
		t.Run(ts, func(t *testing.T) {
			in := fmt.Sprintf(`{"specversion":"1.0","id":"a","source":"/s","type":"t","time":%q}`, ts)
			e, err := envelope.DecodeJSON([]byte(in), 0)
			if err != nil {
				t.Fatal(err)
			}
			want := mustTime(t, ts)
			if !e.Time.Equal(want) || !e.HasTime() {
				t.Fatalf("decoded time %v (has %v), want %v", e.Time, e.HasTime(), want)
			}
			// JSON output keeps it to the nanosecond.
			out, err := json.Marshal(e)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Contains(out, []byte(`"time":"`+ts+`"`)) {
				t.Fatalf("JSON output %s does not carry time %s", out, ts)
			}
			back, err := envelope.DecodeJSON(out, 0)
			if err != nil {
				t.Fatal(err)
			}
			if !back.Time.Equal(want) || back.TimeSet != e.TimeSet {
				t.Fatalf("JSON round trip: %v (set %v), want %v (set %v)", back.Time, back.TimeSet, want, e.TimeSet)
			}
			// Prepare keeps a given time, the zero instant included.
			p := e.Clone()
			p.Time = p.Time.In(time.FixedZone("x", 3600))
			if err := p.Prepare(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), 0); err != nil {
				t.Fatal(err)
			}
			if !p.Time.Equal(want) || p.Time.Location() != time.UTC {
				t.Fatalf("Prepare changed the time to %v, want %v", p.Time, want)
			}
			// sdk-go: the event, its JSON, and back.
			ce := e.ToCloudEvent()
			if err := ce.Validate(); err != nil {
				t.Fatal(err)
			}
			cej, err := json.Marshal(ce)
			if err != nil {
				t.Fatal(err)
			}
			var ce2 cloudevent.Event
			if err := json.Unmarshal(cej, &ce2); err != nil {
				t.Fatal(err)
			}
			for name, c := range map[string]cloudevent.Event{"event": ce, "its JSON": ce2} {
				got, err := envelope.FromCloudEvent(c, 0)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				if !got.Time.Equal(want) || !got.HasTime() || got.TimeSet != e.TimeSet {
					t.Fatalf("sdk-go %s: time %v (set %v), want %v", name, got.Time, got.TimeSet, want)
				}
			}
		})
	}
}

// The zero time.Time is unset; the same instant given is kept.
func TestUnsetTimeAndExplicitZero(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	unset := envelope.Event{Source: "/s", Type: "t"}
	if unset.HasTime() {
		t.Fatal("an Event with no time reports one")
	}
	if b, _ := json.Marshal(unset); bytes.Contains(b, []byte(`"time"`)) {
		t.Fatalf("unset time written: %s", b)
	}
	if err := unset.Prepare(now, 0); err != nil || !unset.Time.Equal(now) {
		t.Fatalf("Prepare on an unset time: %v, %v", unset.Time, err)
	}
	given := envelope.Event{Source: "/s", Type: "t", TimeSet: true}
	if err := given.Prepare(now, 0); err != nil {
		t.Fatal(err)
	}
	if !given.Time.IsZero() || !given.HasTime() {
		t.Fatalf("Prepare replaced the given time 0001-01-01T00:00:00Z with %v", given.Time)
	}
	b, _ := json.Marshal(given)
	if !bytes.Contains(b, []byte(`"time":"0001-01-01T00:00:00Z"`)) {
		t.Fatalf("explicit zero time not written: %s", b)
	}
	// Without a time attribute, decoding leaves it unset.
	e, err := envelope.DecodeJSON([]byte(`{"specversion":"1.0","id":"a","source":"/s","type":"t"}`), 0)
	if err != nil || e.HasTime() || e.TimeSet {
		t.Fatalf("decoded an absent time as %v (set %v), %v", e.Time, e.TimeSet, err)
	}
}

// hostileValues are values no string attribute may hold.
var hostileValues = map[string]string{
	"NUL":             "a\x00b",
	"U+001F":          "a\x1fb",
	"newline":         "a\nb",
	"tab":             "a\tb",
	"DEL":             "a\x7fb",
	"U+0080":          "a\u0080b",
	"U+0085 NEL":      "a\u0085b",
	"U+009F":          "a\u009fb",
	"leading space":   " ab",
	"trailing space":  "ab ",
	"leading NBSP":    "\u00a0ab",
	"trailing U+3000": "ab\u3000",
}

func TestControlCharactersRefused(t *testing.T) {
	base := func() envelope.Event {
		return envelope.Event{ID: "id-1", Source: "/s", Type: "t", Stream: "s", DataContentType: "application/json",
			CorrelationID: "c", CausationID: "k", Extensions: map[string]any{"ext": "v"}}
	}
	set := map[string]func(e *envelope.Event, v string){
		"id":              func(e *envelope.Event, v string) { e.ID = v },
		"source":          func(e *envelope.Event, v string) { e.Source = "/" + v },
		"type":            func(e *envelope.Event, v string) { e.Type = v },
		"stream":          func(e *envelope.Event, v string) { e.Stream = v },
		"correlationid":   func(e *envelope.Event, v string) { e.CorrelationID = v },
		"causationid":     func(e *envelope.Event, v string) { e.CausationID = v },
		"ext":             func(e *envelope.Event, v string) { e.Extensions["ext"] = v },
		"dataschema":      func(e *envelope.Event, v string) { e.DataSchema = "https://x/" + v },
		"datacontenttype": func(e *envelope.Event, v string) { e.DataContentType = "application/json;a=" + v },
	}
	ok := base()
	if err := ok.Validate(0); err != nil {
		t.Fatalf("base event refused: %v", err)
	}
	for field, f := range set {
		for name, v := range hostileValues {
			if (field == "source" || field == "dataschema" || field == "datacontenttype") && strings.HasPrefix(name, "leading") {
				continue // the value is not at the start of these attributes
			}
			t.Run(field+"/"+name, func(t *testing.T) {
				e := base()
				f(&e, v)
				checkField(t, e.Validate(0), field)
				if field == "stream" {
					checkField(t, envelope.ValidateStream(v), "stream")
				}
				// The same through the JSON decoder, escaped as JSON.
				b := e.AppendJSON(nil)
				_, err := envelope.DecodeJSON(b, 0)
				if err == nil {
					t.Fatalf("DecodeJSON accepted %s", b)
				}
				if !errors.Is(err, envelope.ErrInvalidEvent) {
					t.Fatalf("DecodeJSON: %v", err)
				}
			})
		}
	}
	// Inner spaces and non-control characters stay allowed.
	e := base()
	e.Type, e.ID, e.Extensions["ext"] = "order placed", "id\u00e9 \u2028x", "a b"
	if err := e.Validate(0); err != nil {
		t.Fatalf("refused a valid event: %v", err)
	}
}

func event(extra string) []byte {
	return []byte(`{"specversion":"1.0","id":"a","source":"/s","type":"t"` + extra + `}`)
}

func TestInvalidUTF8AndLoneSurrogatesRefused(t *testing.T) {
	tests := []struct {
		name, extra, field string
	}{
		{"data invalid UTF-8", `,"data":{"k":"a` + "\xff" + `b"}`, "data"},
		{"data truncated rune", `,"data":["` + "\xc3" + `"]`, "data"},
		{"data lone high surrogate", `,"data":"\ud800"`, "data"},
		{"data lone low surrogate", `,"data":{"k":"x\udc00y"}`, "data"},
		{"data high then non-surrogate", `,"data":"\ud800\u0041"`, "data"},
		{"data surrogate in member name", `,"data":{"\udbff":1}`, "data"},
		{"text data lone surrogate", `,"datacontenttype":"text/plain","data":"\ud800"`, "data"},
		{"correlationid invalid UTF-8", `,"correlationid":"a` + "\xff" + `"`, "correlationid"},
		{"subject lone surrogate", `,"subject":"\udfff"`, "subject"},
		{"extension two high surrogates", `,"source2":"\ud800\ud800"`, "source2"},
		{"extension lone surrogate", `,"ext":"a\ud800"`, "ext"},
		{"extension invalid UTF-8", `,"ext":"` + "\xe2\x82" + `"`, "ext"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := envelope.DecodeJSON(event(tt.extra), 0)
			checkField(t, err, tt.field)
			// In a batch and a sequence too.
			_, err = envelope.DecodeBatchJSON([]byte(`[`+string(event(""))+`,`+string(event(tt.extra))+`]`), 0)
			checkField(t, err, tt.field)
			_, err = envelope.DecodeSequence(bytes.NewReader(event(tt.extra)), 0)
			checkField(t, err, tt.field)
		})
	}
	// Prepare and Validate refuse such data given directly.
	for _, d := range []string{`"a` + "\xff" + `"`, `"\ud800"`, `["\udc00"]`} {
		e := envelope.Event{Source: "/s", Type: "t", Data: []byte(d)}
		checkField(t, e.Prepare(time.Now(), 0), "data")
		e = envelope.Event{ID: "a", Source: "/s", Type: "t", Data: []byte(d)}
		checkField(t, e.Validate(0), "data")
	}
	// Binary mode: a header value that is not UTF-8.
	_, err := envelope.DecodeBinary(map[string]string{"specversion": "1.0", "id": "a\xff", "source": "/s", "type": "t"}, nil, 0)
	checkField(t, err, "id")
	// Valid pairs and escapes stay accepted, unchanged.
	e, err := envelope.DecodeJSON(event(`,"ext":"\ud83d\ude00","data":{"k":"\ud83d\ude00 \u00e9 \\u"}`), 0)
	if err != nil {
		t.Fatal(err)
	}
	if e.Extensions["ext"] != "\U0001F600" || string(e.Data) != `{"k":"\ud83d\ude00 \u00e9 \\u"}` {
		t.Fatalf("valid escapes changed: %q %s", e.Extensions["ext"], e.Data)
	}
}

func TestDuplicateMembersRefused(t *testing.T) {
	for _, tt := range []struct{ name, in, field string }{
		{"id twice", `{"specversion":"1.0","id":"a","id":"b","source":"/s","type":"t"}`, "id"},
		{"escaped name", `{"specversion":"1.0","id":"a","\u0069d":"b","source":"/s","type":"t"}`, "id"},
		{"data twice", `{"specversion":"1.0","id":"a","source":"/s","type":"t","data":1,"data":2}`, "data"},
		{"extension twice", `{"specversion":"1.0","id":"a","source":"/s","type":"t","x":1,"x":1}`, "x"},
		{"null then value", `{"specversion":"1.0","id":"a","source":"/s","type":"t","subject":null,"subject":"s"}`, "subject"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := envelope.DecodeJSON([]byte(tt.in), 0)
			checkField(t, err, tt.field)
			_, err = envelope.DecodeBatchJSON([]byte(`[`+string(event(""))+`,`+tt.in+`]`), 0)
			checkField(t, err, tt.field)
			var ie *envelope.InvalidError
			if errors.As(err, &ie) && ie.Index != 1 {
				t.Errorf("batch index %d, want 1", ie.Index)
			}
			_, err = envelope.DecodeSequence(strings.NewReader(string(event(""))+"\n"+tt.in), 0)
			checkField(t, err, tt.field)
		})
	}
	// Members inside data are the application's business.
	e, err := envelope.DecodeJSON(event(`,"data":{"a":1,"a":2}`), 0)
	if err != nil {
		t.Fatalf("duplicate members inside data refused: %v", err)
	}
	if string(e.Data) != `{"a":1,"a":2}` {
		t.Fatalf("data changed: %s", e.Data)
	}
}

func nested(depth int) string {
	return strings.Repeat("[", depth) + strings.Repeat("]", depth)
}

func TestDataDepth(t *testing.T) {
	for _, depth := range []int{envelope.MaxDataDepth, envelope.MaxDataDepth + 1, 10_000, 10_001, 100_000} {
		ok := depth <= envelope.MaxDataDepth
		t.Run(fmt.Sprint(depth), func(t *testing.T) {
			check := func(what string, err error) {
				t.Helper()
				if ok {
					if err != nil {
						t.Fatalf("%s: data nested %d deep refused: %v", what, depth, err)
					}
					return
				}
				checkField(t, err, "data")
			}
			in := event(`,"data":` + nested(depth))
			_, err := envelope.DecodeJSON(in, -1)
			check("DecodeJSON", err)
			_, err = envelope.DecodeBatchJSON([]byte("["+string(in)+"]"), -1)
			check("DecodeBatchJSON", err)
			_, err = envelope.DecodeSequence(bytes.NewReader([]byte(" ["+string(in)+"]\n"+string(in))), -1)
			check("DecodeSequence", err)
			e := envelope.Event{Source: "/s", Type: "t", Data: []byte(nested(depth))}
			check("Prepare", e.Prepare(time.Now(), -1))
			e = envelope.Event{ID: "a", Source: "/s", Type: "t", Data: []byte(nested(depth))}
			check("Validate", e.Validate(-1))
			if ok {
				// The copy a reader makes decodes the same way.
				out, _ := json.Marshal(e)
				_, err := envelope.DecodeSequence(bytes.NewReader(out), -1)
				check("re-read", err)
			}
		})
	}
}

func TestMaxEventBytes(t *testing.T) {
	// 20,000 extensions of 1 KB: 20 MB of attributes, each under its own cap.
	e := envelope.Event{ID: "a", Source: "/s", Type: "t", Extensions: map[string]any{}}
	for i := range 20_000 {
		e.Extensions[fmt.Sprintf("x%d", i)] = strings.Repeat("v", 1000)
	}
	size := e.EventBytes()
	if size < 20_000*1000 {
		t.Fatalf("EventBytes %d", size)
	}
	checkTooLarge(t, e.Validate(0), "event", size, envelope.DefaultMaxEventBytes)
	p := e.Clone()
	p.ID = ""
	err := p.Prepare(time.Now(), 0)
	var te *envelope.TooLargeError
	if !errors.As(err, &te) || te.Field != "event" || te.Limit != envelope.DefaultMaxEventBytes {
		t.Fatalf("Prepare: %v", err)
	}
	b, _ := json.Marshal(e)
	_, err = envelope.DecodeJSON(b, 0)
	checkTooLarge(t, err, "event", size, envelope.DefaultMaxEventBytes)

	// The measure: data plus, per attribute, "ce-" + name + value + 4.
	small := envelope.Event{ID: "ab", Source: "/s", Type: "t", Stream: "st", Tenant: "acme",
		Time: time.Date(2026, 1, 2, 3, 4, 5, 120_000_000, time.UTC), Data: []byte(`[1]`),
		Extensions: map[string]any{"n": int32(-12), "b": true}}
	want := 3 + // data
		(3 + 11 + 3 + 4) + (3 + 2 + 2 + 4) + (3 + 6 + 2 + 4) + (3 + 4 + 1 + 4) + // specversion id source type
		(3 + 7 + 2 + 4) + (3 + 4 + len("2026-01-02T03:04:05.12Z") + 4) + (3 + 6 + 4 + 4) + // subject time tenant
		(3 + 13 + 10 + 4) + (3 + 8 + 19 + 4) + // streamversion, position at their widest
		(3 + 1 + 3 + 4) + (3 + 1 + 4 + 4) // n, b
	if got := small.EventBytes(); got != want {
		t.Fatalf("EventBytes = %d, want %d", got, want)
	}
	// The limit is inclusive, and a larger data limit raises the default.
	checkTooLarge(t, small.ValidateLimits(envelope.Limits{MaxEventBytes: want - 1}), "event", want, want-1)
	if err := small.ValidateLimits(envelope.Limits{MaxEventBytes: want}); err != nil {
		t.Fatal(err)
	}
	big := envelope.Event{ID: "a", Source: "/s", Type: "t", Data: []byte(`"` + strings.Repeat("x", 2<<20) + `"`)}
	if err := big.Validate(4 << 20); err != nil {
		t.Fatalf("data under an explicit 4 MiB data limit: %v", err)
	}
}

// Events eventlite stored under earlier, looser rules still decode from
// its own encoding; the same bytes from outside are refused.
func TestDecodeStoredJSONLenient(t *testing.T) {
	old := envelope.Event{ID: "a", Source: "/s", Type: "eventlite.x", Stream: "tab\there", Position: 3, StreamVersion: 1,
		Extensions: map[string]any{"ext": "\x1b[2J "}, DataContentType: "application/json",
		Data: []byte(strings.Repeat("[", 1500) + `"` + "\xff" + `"` + strings.Repeat("]", 1500))}
	b, err := json.Marshal(old)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := envelope.DecodeJSON(b, -1); err == nil {
		t.Fatal("DecodeJSON accepted the event")
	}
	got, err := envelope.DecodeStoredJSON(b)
	if err != nil {
		t.Fatal(err)
	}
	if got.Stream != old.Stream || got.Extensions["ext"] != "\x1b[2J " || !bytes.Equal(got.Data, old.Data) || got.Position != 3 {
		t.Fatalf("stored event changed: %+v", got)
	}
}

// The decoders split events themselves: what is not JSON stays refused.
func TestNotJSONStillRefused(t *testing.T) {
	for _, extra := range []string{
		`,"x":+1`, `,"x":01`, `,"streamversion":+1`, `,"x":1.0`,
		`,"datacontenttype":"text/plain","data":"a` + "\t" + `b"`, `,"subject":"a` + "\n" + `b"`,
		`,"x":tru`, `,"x":nul`, `,"data":{"a":1,}`, `,"data":[1}`, `,`, `,"x"`, `,"x":`, `,"x" 1`,
	} {
		in := event(extra)
		if e, err := envelope.DecodeJSON(in, 0); err == nil {
			t.Errorf("DecodeJSON accepted %s as %+v", in, e)
		} else if !errors.Is(err, envelope.ErrInvalidEvent) {
			t.Errorf("%s: %v", in, err)
		}
	}
	for _, in := range []string{`{} x`, `{}}`, `{"a":1}{`, `[{}`, `{"a" :1,,"b":2}`, `nul`} {
		if _, err := envelope.DecodeJSON([]byte(in), 0); err == nil {
			t.Errorf("DecodeJSON accepted %s", in)
		}
		if _, err := envelope.DecodeSequence(strings.NewReader(in), 0); err == nil {
			t.Errorf("DecodeSequence accepted %s", in)
		}
	}
}
