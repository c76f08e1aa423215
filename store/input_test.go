package store_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/drivertest"
	"github.com/eventlite/eventlite/store/outbox"
	"github.com/eventlite/eventlite/store/storetest"
)

var extremeTimes = []struct {
	ts      string
	integer bool // stored as Unix nanoseconds, as rows always were
}{
	{"0001-01-01T00:00:00Z", false},
	{"0001-01-01T00:00:00.000000001Z", false},
	{"1677-09-21T00:12:43.145224191Z", false},
	{"1677-09-21T00:12:43.145224192Z", true},
	{"1677-09-21T12:00:00Z", true},
	{"2026-05-01T12:34:56.789Z", true},
	{"2262-04-11T23:47:16.854775807Z", true},
	{"2262-04-12T00:00:00Z", false},
	{"9999-12-31T23:59:59.999999999Z", false},
}

// Every instant RFC 3339 can write is kept exactly; instants that Unix
// nanoseconds hold are stored as before (INTEGER), the others as text.
func TestExtremeTimesStoredExactly(t *testing.T) {
	ctx := context.Background()
	s := storetest.MustOpen(t, nil)
	var want []time.Time
	for i, x := range extremeTimes {
		tm, err := time.Parse(time.RFC3339Nano, x.ts)
		if err != nil {
			t.Fatal(err)
		}
		e := drivertest.Event(t, "t", i)
		e.Time, e.TimeSet = tm, tm.IsZero()
		if _, err := s.Append(ctx, "default", "times", store.Any, e); err != nil {
			t.Fatalf("%s: %v", x.ts, err)
		}
		want = append(want, tm.UTC())
	}
	// An event with no time gets the store's clock.
	if _, err := s.Append(ctx, "default", "times", store.Any, drivertest.Event(t, "t", nil)); err != nil {
		t.Fatal(err)
	}
	i := 0
	for e, err := range s.ReadStream(ctx, "default", "times", store.ReadStreamOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		if i == len(want) {
			if !e.HasTime() || e.Time.Year() < 2000 || e.TimeSet {
				t.Errorf("unset time stored as %v (set %v)", e.Time, e.TimeSet)
			}
			break
		}
		if !e.Time.Equal(want[i]) || e.Time.Location() != time.UTC || !e.HasTime() || e.TimeSet != want[i].IsZero() {
			t.Errorf("event %d: time %v (set %v), want %v", i, e.Time, e.TimeSet, want[i])
		}
		if got := e.Time.Format(time.RFC3339Nano); got != extremeTimes[i].ts {
			t.Errorf("event %d: %s, want %s", i, got, extremeTimes[i].ts)
		}
		i++
	}
	// The same through the outbox, which the relay reads.
	rows, err := outbox.For(s).Read(ctx, outbox.ReadOptions{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	for j, want := range want {
		if got := rows[j].Event.Time; !got.Equal(want) || rows[j].Event.TimeSet != want.IsZero() {
			t.Errorf("outbox row %d: time %v (set %v), want %v", j, got, rows[j].Event.TimeSet, want)
		}
	}
	// The column keeps INTEGER where it fits: older rows and readers of
	// the file see what they always did.
	db, err := sql.Open("sqlite", "file:"+s.Path()+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	q, err := db.Query(`SELECT typeof(time) FROM events WHERE stream_id = 'times' ORDER BY position`)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	for j := 0; q.Next() && j < len(extremeTimes); j++ {
		var typ string
		if err := q.Scan(&typ); err != nil {
			t.Fatal(err)
		}
		if want := map[bool]string{true: "integer", false: "text"}[extremeTimes[j].integer]; typ != want {
			t.Errorf("%s stored as %s, want %s", extremeTimes[j].ts, typ, want)
		}
	}
}

func TestParseExpectedEmptyRefused(t *testing.T) {
	if x, err := store.ParseExpected(""); err == nil {
		t.Fatalf(`ParseExpected("") = %v, nil: an empty string must not turn the check off`, x)
	}
	if x, err := store.ParseExpected("any"); err != nil || x != store.Any {
		t.Fatalf(`ParseExpected("any") = %v, %v`, x, err)
	}
}

// refused asserts a typed refusal naming field and that nothing was stored.
func refused(t *testing.T, s *store.Store, before string, err error, field string) {
	t.Helper()
	var ie *envelope.InvalidError
	var te *envelope.TooLargeError
	switch {
	case errors.As(err, &ie):
		if ie.Field != field || !errors.Is(err, store.ErrInvalidEvent) {
			t.Errorf("InvalidError on %q, want %q: %v", ie.Field, field, err)
		}
	case errors.As(err, &te):
		if te.Field != field || !errors.Is(err, store.ErrTooLarge) {
			t.Errorf("TooLargeError on %q, want %q: %v", te.Field, field, err)
		}
	default:
		t.Fatalf("want a refusal of %s, got %v", field, err)
	}
	if after := dump(t, s.Path()); after != before {
		t.Error("a refused append changed the file")
	}
}

func TestHostileAttributesRefused(t *testing.T) {
	ctx := context.Background()
	s := storetest.MustOpen(t, nil)
	before := dump(t, s.Path())
	for _, tt := range []struct {
		name, field string
		edit        func(e *envelope.Event)
	}{
		{"type with NUL", "type", func(e *envelope.Event) { e.Type = "a\x00b" }},
		{"id with newline", "id", func(e *envelope.Event) { e.ID = "a\nb" }},
		{"correlation id with U+0085", "correlationid", func(e *envelope.Event) { e.CorrelationID = "a\u0085" }},
		{"causation id with trailing space", "causationid", func(e *envelope.Event) { e.CausationID = "k " }},
		{"extension with ESC", "ext", func(e *envelope.Event) { e.Extensions = map[string]any{"ext": "\x1b[31m"} }},
		{"source with DEL", "source", func(e *envelope.Event) { e.Source = "/a\x7f" }},
		{"reserved type", "type", func(e *envelope.Event) { e.Type = "eventlite.stream.deleted" }},
		{"data not UTF-8", "data", func(e *envelope.Event) { e.Data = []byte("\"\xff\"") }},
		{"data lone surrogate", "data", func(e *envelope.Event) { e.Data = []byte(`"\ud800"`) }},
		{"data too deep", "data", func(e *envelope.Event) {
			e.Data = []byte(strings.Repeat("[", envelope.MaxDataDepth+1) + strings.Repeat("]", envelope.MaxDataDepth+1))
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := drivertest.Event(t, "t", 1)
			tt.edit(&e)
			_, err := s.Append(ctx, "default", "s", store.Any, drivertest.Event(t, "t", 0), e)
			refused(t, s, before, err, tt.field)
		})
	}
	_, err := s.Append(ctx, "default", "s\x00", store.Any, drivertest.Event(t, "t", 0))
	refused(t, s, before, err, "stream")
	_, err = s.Append(ctx, "default", "s\u009b", store.Any, drivertest.Event(t, "t", 0))
	refused(t, s, before, err, "stream")
	// A type that only contains the prefix further on is the caller's.
	if _, err := s.Append(ctx, "default", "s", store.Any, drivertest.Event(t, "com.example.eventlite.x", 0)); err != nil {
		t.Fatal(err)
	}
}

func TestMaxEventBytes(t *testing.T) {
	ctx := context.Background()
	s := storetest.MustOpen(t, nil)
	before := dump(t, s.Path())
	// 20,000 extensions of 1 KB, each under the attribute cap.
	e := drivertest.Event(t, "t", 1)
	e.Extensions = map[string]any{}
	for i := range 20_000 {
		e.Extensions[fmt.Sprintf("x%d", i)] = strings.Repeat("v", 1000)
	}
	_, err := s.Append(ctx, "default", "s", store.Any, e)
	refused(t, s, before, err, "event")
	var te *envelope.TooLargeError
	if errors.As(err, &te) && te.Limit != envelope.DefaultMaxEventBytes {
		t.Errorf("limit %d, want %d", te.Limit, envelope.DefaultMaxEventBytes)
	}
	// Options.MaxEventBytes sets the limit.
	small := storetest.MustOpen(t, &store.Options{MaxDataBytes: 100, MaxEventBytes: 400})
	e = drivertest.Event(t, "t", 1)
	e.Extensions = map[string]any{"x": strings.Repeat("v", 300)}
	_, err = small.Append(ctx, "default", "s", store.Any, e)
	if !errors.As(err, &te) || te.Field != "event" || te.Limit != 400 {
		t.Fatalf("want the event limit of 400, got %v", err)
	}
	// The data limit is at most the event limit.
	if _, err := store.Open(ctx, filepath.Join(t.TempDir(), "x.db"), &store.Options{MaxDataBytes: 2 << 20}); err == nil {
		t.Fatal("Open took a data limit above the event limit")
	}
}
