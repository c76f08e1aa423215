package aggregate_test

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/eventlite/eventlite/aggregate"
	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/storetest"
)

// A command is one "command" span with one "attempt" child per attempt;
// the attempt that met a conflict ends with status Error, the next one
// follows, and the store's append span is the successful attempt's child.
func TestHandleSpans(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer tp.Shutdown(context.Background())
	s := storetest.MustOpen(t, &store.Options{TracerProvider: tp})
	ctx := context.Background()

	def := counterDef()
	decide := def.Decide
	raced := false
	def.Decide = func(c Counter, cmd aggregate.Command) ([]any, error) {
		if !raced { // another writer lands between load and append
			raced = true
			e, err := envelope.New("counter.added", Added{N: 1, By: "other"})
			if err != nil {
				return nil, err
			}
			e.Source = "/other"
			if _, err := s.Append(ctx, "default", cmd.Stream, store.Any, e); err != nil {
				return nil, err
			}
		}
		return decide(c, cmd)
	}
	h, err := aggregate.New(s, def, &aggregate.Options{TracerProvider: tp})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Handle(ctx, aggregate.Command{Stream: "c-1", Payload: Add{N: 2, By: "me"}}); err != nil {
		t.Fatal(err)
	}

	byName := map[string][]sdktrace.ReadOnlySpan{}
	for _, sp := range rec.Ended() {
		byName[sp.Name()] = append(byName[sp.Name()], sp)
	}
	cmdSpans, attempts, appends := byName["command"], byName["attempt"], byName["append"]
	if len(cmdSpans) != 1 || len(attempts) != 2 || len(appends) != 3 {
		t.Fatalf("%d command, %d attempt, %d append spans; want 1, 2, 3 (the racing writer's included)", len(cmdSpans), len(attempts), len(appends))
	}
	cmdSpan := cmdSpans[0]
	if cmdSpan.Status().Code != codes.Unset {
		t.Errorf("command status %v, want unset", cmdSpan.Status())
	}
	for i, a := range attempts {
		if a.Parent().SpanID() != cmdSpan.SpanContext().SpanID() {
			t.Errorf("attempt %d is not the command's child", i+1)
		}
	}
	if attempts[0].Status().Code != codes.Error {
		t.Errorf("conflicting attempt status %v, want Error", attempts[0].Status())
	}
	if attempts[1].Status().Code != codes.Unset {
		t.Errorf("second attempt status %v, want unset", attempts[1].Status())
	}
	// The racing writer's append is a root of its own (it used the test's
	// ctx); the refused append is the first attempt's child, the stored one
	// the second's.
	var children [2]int
	for _, ap := range appends {
		for i, a := range attempts {
			if ap.Parent().SpanID() == a.SpanContext().SpanID() {
				children[i]++
			}
		}
	}
	if children != [2]int{1, 1} {
		t.Errorf("append spans under attempts %v, want one each", children)
	}
	evs := readAll(t, s, "c-1")
	want := traceparent(appends[2].SpanContext())
	if got := evs[len(evs)-1].Extensions["traceparent"]; got != want {
		t.Errorf("stored traceparent %v, want the second attempt's append span %s", got, want)
	}
}

func readAll(t *testing.T, s *store.Store, stream string) []envelope.Event {
	t.Helper()
	var out []envelope.Event
	for e, err := range s.ReadStream(context.Background(), "default", stream, store.ReadStreamOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, e)
	}
	return out
}

func traceparent(sc trace.SpanContext) string {
	return "00-" + sc.TraceID().String() + "-" + sc.SpanID().String() + "-" + sc.TraceFlags().String()
}
