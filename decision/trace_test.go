package decision_test

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/eventlite/eventlite/decision"
	"github.com/eventlite/eventlite/store"
)

// A command is one "command" span with one "attempt" child per attempt;
// each attempt has a "read" child (the events it folded, the condition's
// position), a "decide" child and the store's "append" span. The attempt
// whose condition failed ends with status Error, the next one follows,
// and the stored event's origin is the second attempt's append span.
func TestHandleSpans(t *testing.T) {
	onEngines(t, func(t *testing.T, eng engine) {
		rec := tracetest.NewSpanRecorder()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
		defer tp.Shutdown(context.Background())
		ctx := context.Background()
		hk := &hooks{}
		s, _ := eng.open(t, &store.Options{TracerProvider: tp})
		seedPool(t, s, "p", 2)
		reg := ticketRegistry()
		raced := false
		f := func(point string) {
			if point != "decide" || raced {
				return
			}
			// Another writer books between the first read and its append.
			raced = true
			e, err := reg.Encode("ticket.booked", TicketBooked{Pool: "p", By: "race"})
			if err != nil {
				t.Fatal(err)
			}
			e.Tags = []string{"pool:p"}
			if _, err := s.Append(ctx, "default", "race", store.Any, e); err != nil {
				t.Fatal(err)
			}
		}
		hk.at.Store(&f)
		h := newBookTicket(t, s, hk, &decision.Options{TracerProvider: tp})
		res, err := h.Handle(ctx, decision.Command[BookTicket]{ID: "cmd-1", Payload: BookTicket{Pool: "p"}})
		if err != nil {
			t.Fatal(err)
		}

		var cmdSpan sdktrace.ReadOnlySpan
		for _, sp := range rec.Ended() {
			if sp.Name() == "command" {
				cmdSpan = sp
			}
		}
		if cmdSpan == nil {
			t.Fatal("no command span")
		}
		// The spans of the command's trace, by parent.
		children := map[string][]sdktrace.ReadOnlySpan{}
		for _, sp := range rec.Ended() {
			if sp.SpanContext().TraceID() == cmdSpan.SpanContext().TraceID() {
				children[sp.Parent().SpanID().String()] = append(children[sp.Parent().SpanID().String()], sp)
			}
		}
		attrs := func(sp sdktrace.ReadOnlySpan) map[attribute.Key]attribute.Value {
			m := map[attribute.Key]attribute.Value{}
			for _, a := range sp.Attributes() {
				m[a.Key] = a.Value
			}
			return m
		}
		ca := attrs(cmdSpan)
		if ca["eventlite.decision"].AsString() != "book_ticket" || ca["eventlite.command"].AsString() != "BookTicket" ||
			ca["eventlite.tenant"].AsString() != "default" || ca["eventlite.position"].AsInt64() != res.LastPosition() ||
			ca["eventlite.replayed"].AsBool() {
			t.Errorf("command span attributes %v", ca)
		}
		if cmdSpan.Status().Code != codes.Unset {
			t.Errorf("command status %v, want unset", cmdSpan.Status())
		}
		attempts := children[cmdSpan.SpanContext().SpanID().String()]
		if len(attempts) != 2 {
			t.Fatalf("%d attempt spans under the command, want 2", len(attempts))
		}
		for i, a := range attempts {
			if a.Name() != "attempt" || attrs(a)["eventlite.attempt"].AsInt64() != int64(i+1) || attrs(a)["eventlite.command.id"].AsString() != "cmd-1" {
				t.Errorf("attempt %d: %s %v", i+1, a.Name(), attrs(a))
			}
			var names []string
			byName := map[string]sdktrace.ReadOnlySpan{}
			for _, c := range children[a.SpanContext().SpanID().String()] {
				names = append(names, c.Name())
				byName[c.Name()] = c
			}
			if len(names) != 3 || byName["read"] == nil || byName["decide"] == nil || byName["append"] == nil {
				t.Fatalf("attempt %d has children %v, want read, decide, append", i+1, names)
			}
			read := attrs(byName["read"])
			// The first attempt read the 2 seeded bookings, the second
			// the racing one too; the condition's position is the newest.
			if got, want := read["eventlite.read.events"].AsInt64(), int64(2+i); got != want {
				t.Errorf("attempt %d read %d events, want %d", i+1, got, want)
			}
			if read["eventlite.condition.after"].AsInt64() < int64(2+i) {
				t.Errorf("attempt %d: condition after %d", i+1, read["eventlite.condition.after"].AsInt64())
			}
			if got := attrs(byName["decide"])["eventlite.decided.events"].AsInt64(); got != 1 {
				t.Errorf("attempt %d decided %d events, want 1", i+1, got)
			}
		}
		if attempts[0].Status().Code != codes.Error {
			t.Errorf("the attempt whose condition failed has status %v, want Error", attempts[0].Status())
		}
		if attempts[1].Status().Code != codes.Unset {
			t.Errorf("second attempt status %v, want unset", attempts[1].Status())
		}
		var app sdktrace.ReadOnlySpan
		for _, c := range children[attempts[1].SpanContext().SpanID().String()] {
			if c.Name() == "append" {
				app = c
			}
		}
		e, err := s.EventByID(ctx, "default", res.EventIDs[0])
		if err != nil {
			t.Fatal(err)
		}
		sc := app.SpanContext()
		want := "00-" + sc.TraceID().String() + "-" + sc.SpanID().String() + "-" + sc.TraceFlags().String()
		if got := e.Extensions["traceparent"]; got != want {
			t.Errorf("stored traceparent %v, want the second attempt's append span %s", got, want)
		}
	})
}
