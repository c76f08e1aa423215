package natsjs_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"
	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/eventlite/eventlite/aggregate"
	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/natsjs"
	"github.com/eventlite/eventlite/natsjs/natstest"
	"github.com/eventlite/eventlite/projection"
	"github.com/eventlite/eventlite/publish"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/storetest"
)

var updateGolden = flag.Bool("update", false, "rewrite the golden files in testdata")

// service is one service's TracerProvider and what it recorded.
type service struct {
	name string
	tp   *sdktrace.TracerProvider
	rec  *tracetest.SpanRecorder
	end  chan sdktrace.ReadOnlySpan // every ended span, for waiting
}

func newService(t *testing.T, name string) *service {
	sv := &service{name: name, rec: tracetest.NewSpanRecorder(), end: make(chan sdktrace.ReadOnlySpan, 1024)}
	sv.tp = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sv.rec), sdktrace.WithSpanProcessor(endSignal(sv.end)))
	t.Cleanup(func() { _ = sv.tp.Shutdown(context.Background()) })
	return sv
}

// endSignal is a span processor that hands over every ended span.
type endSignal chan sdktrace.ReadOnlySpan

func (c endSignal) OnStart(context.Context, sdktrace.ReadWriteSpan) {}
func (c endSignal) OnEnd(s sdktrace.ReadOnlySpan)                   { c <- s }
func (c endSignal) Shutdown(context.Context) error                  { return nil }
func (c endSignal) ForceFlush(context.Context) error                { return nil }

type OrderPlaced struct {
	Order string `json:"order"`
	Total int    `json:"total"`
}
type PlaceOrder struct {
	Total int `json:"total"`
}

// One trace from a command in service A to service B's read models: A
// handles a command (its first attempt meets a conflict), appends and
// relays to a real in-process JetStream; B (its own store file and
// TracerProvider) consumes, applies one event, quarantines one it cannot
// interpret, and its projection runner folds what the consumer wrote.
// The span tree is checked against testdata/trace_tree.golden.
func TestTraceTreeAcrossServices(t *testing.T) {
	ctx := context.Background()
	prop := propagation.TraceContext{}
	a, b := newService(t, "A"), newService(t, "B")
	srv := natstest.RunJetStream(t, nil)

	// Service A: an order aggregate; a racing writer lands between the
	// first attempt's load and its append.
	sa := storetest.MustOpen(t, &store.Options{TracerProvider: a.tp, Propagator: prop})
	var reg envelope.Registry
	envelope.Register[OrderPlaced](&reg, "order.placed")
	raced := false
	h, err := aggregate.New(sa, aggregate.Definition[int]{
		Name: "order", Registry: &reg,
		Evolve: func(n int, _ aggregate.Event) int { return n + 1 },
		Decide: func(n int, cmd aggregate.Command) ([]any, error) {
			if !raced {
				raced = true
				e := newEvent(t, "order.placed", OrderPlaced{Order: "racer", Total: 1})
				if _, err := sa.Append(ctx, "default", cmd.Stream, store.Any, e); err != nil {
					return nil, err
				}
			}
			return []any{OrderPlaced{Order: cmd.Stream, Total: cmd.Payload.(PlaceOrder).Total}}, nil
		},
	}, &aggregate.Options{TracerProvider: a.tp})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Handle(ctx, aggregate.Command{Stream: "order-1", Payload: PlaceOrder{Total: 42}}); err != nil {
		t.Fatal(err)
	}
	// An event B cannot interpret, appended by a caller that traces.
	cctx, caller := a.tp.Tracer("test").Start(ctx, "import")
	if _, err := sa.Append(cctx, "default", "order-2", store.Any, newEvent(t, "order.garbled", map[string]int{"x": 1})); err != nil {
		t.Fatal(err)
	}
	caller.End()
	pub := newNATS(t, srv.URL(), natsjs.Options{})
	relay := newRelay(t, publish.Options{Store: sa, Publisher: pub, Once: true, TracerProvider: a.tp, Propagator: prop})
	if err := relay.Run(ctx); err != nil {
		t.Fatal(err)
	}

	// Service B: a consumer that records each order in B's own log, and a
	// projection runner over that log.
	sb := storetest.MustOpen(t, &store.Options{TracerProvider: b.tp, Propagator: prop})
	c, err := projection.NewConsumer(sb, projection.ConsumerOptions{Name: "orders", TracerProvider: b.tp, Propagator: prop,
		Apply: func(ctx context.Context, tx *store.Tx, e envelope.Event) error {
			if e.Type != "order.placed" {
				return fmt.Errorf("%w: type %s", projection.ErrUninterpretable, e.Type)
			}
			rec := newEvent(t, "order.recorded", map[string]string{"id": e.ID})
			_, err := tx.Append(ctx, "default", "orders", store.Any, rec)
			return err
		}})
	if err != nil {
		t.Fatal(err)
	}
	js, err := jetstream.New(srv.Connect(t))
	if err != nil {
		t.Fatal(err)
	}
	rctx, stop := context.WithCancel(ctx)
	defer stop()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := natsjs.RunJetStream(rctx, js, c, natsjs.JetStreamOptions{}); err != nil {
			t.Error(err)
		}
	}()
	timeout := time.After(time.Minute) // a failure, not a timing assumption
	for processed := 0; processed < 3; {
		select {
		case sp := <-b.end:
			if sp.Name() == "process" {
				processed++
			}
		case <-timeout:
			t.Fatalf("B processed %d of 3 messages", processed)
		}
	}
	stop()
	wg.Wait()
	var folded int
	runner, err := projection.NewRunner(sb, projection.Projection{Name: "recorded", Types: []string{"order.recorded"},
		Apply: func(context.Context, *projection.Tx, envelope.Event) error { folded++; return nil }},
		&projection.RunnerOptions{TracerProvider: b.tp})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := runner.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	if folded != 2 {
		t.Fatalf("projection folded %d events, want 2", folded)
	}

	spans := append(labelled(a), labelled(b)...)
	checkTree(t, spans)
	got := renderTree(spans)
	golden := filepath.Join("testdata", "trace_tree.golden")
	if *updateGolden {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if d := gocmp.Diff(string(want), got); d != "" {
		t.Errorf("span tree (-%s +got); run with -update after checking the change:\n%s", golden, d)
	}
}

type span struct {
	svc string
	sdktrace.ReadOnlySpan
}

func labelled(sv *service) []span {
	var out []span
	for _, s := range sv.rec.Ended() {
		out = append(out, span{sv.name, s})
	}
	return out
}

func attr(s sdktrace.ReadOnlySpan, key string) string {
	for _, kv := range s.Attributes() {
		if string(kv.Key) == key {
			return kv.Value.String()
		}
	}
	return ""
}

// checkTree asserts the links between services directly, beside the
// golden file: B's process span of the applied order is in the trace of
// A's per-message send span, its child, and linked to A's append span.
func checkTree(t *testing.T, spans []span) {
	t.Helper()
	byID := map[trace.SpanID]span{}
	for _, s := range spans {
		byID[s.SpanContext().SpanID()] = s
	}
	found := false
	for _, s := range spans {
		if s.svc != "B" || s.Name() != "process" || attr(s, "eventlite.inbox.decision") != "applied" {
			continue
		}
		found = true
		send := byID[s.Parent().SpanID()]
		if send.svc != "A" || send.Name() != "send" || send.SpanKind() != trace.SpanKindProducer || send.SpanContext().TraceID() != s.SpanContext().TraceID() {
			t.Errorf("B's process span: parent %s %s, want A's per-message send span in the same trace", send.svc, send.Name())
		}
		if l := s.Links(); len(l) != 1 || byID[l[0].SpanContext.SpanID()].Name() != "append" || byID[l[0].SpanContext.SpanID()].svc != "A" {
			t.Errorf("B's process span links %v, want A's append span", l)
		}
	}
	if !found {
		t.Error("no applied process span in B")
	}
}

// renderTree writes the spans as indented text: one block per trace (in
// the order the traces started), children in start order. Ids are random,
// so spans are numbered as printed and links name those numbers.
func renderTree(spans []span) string {
	byID := map[trace.SpanID]span{}
	children := map[trace.SpanID][]span{}
	var roots []span
	for _, s := range spans {
		byID[s.SpanContext().SpanID()] = s
	}
	for _, s := range spans {
		if _, ok := byID[s.Parent().SpanID()]; ok && s.Parent().IsValid() {
			children[s.Parent().SpanID()] = append(children[s.Parent().SpanID()], s)
		} else {
			roots = append(roots, s)
		}
	}
	byStart := func(x, y span) int { return x.StartTime().Compare(y.StartTime()) }
	slices.SortStableFunc(roots, byStart)
	for _, c := range children {
		slices.SortStableFunc(c, byStart)
	}
	num := map[trace.SpanID]int{}
	var order []span
	var depth []int
	var walk func(s span, d int)
	walk = func(s span, d int) {
		num[s.SpanContext().SpanID()] = len(order) + 1
		order = append(order, s)
		depth = append(depth, d)
		for _, c := range children[s.SpanContext().SpanID()] {
			walk(c, d+1)
		}
	}
	for _, r := range roots {
		walk(r, 0)
	}
	var b strings.Builder
	for i, s := range order {
		if depth[i] == 0 {
			fmt.Fprintf(&b, "trace\n")
		}
		fmt.Fprintf(&b, "%s#%d %s %s %s", strings.Repeat("  ", depth[i]+1), i+1, s.svc, s.Name(), strings.ToUpper(s.SpanKind().String()))
		for _, k := range []string{"messaging.operation.type", "eventlite.stream", "eventlite.attempt", "eventlite.stream.version",
			"eventlite.inbox.decision", "messaging.batch.message_count", "eventlite.projection"} {
			if v := attr(s, k); v != "" {
				fmt.Fprintf(&b, " %s=%s", strings.TrimPrefix(strings.TrimPrefix(k, "eventlite."), "messaging."), v)
			}
		}
		if s.Status().Code == codes.Error {
			b.WriteString(" status=Error")
		}
		var links []string
		for _, l := range s.Links() {
			if n, ok := num[l.SpanContext.SpanID()]; ok {
				links = append(links, fmt.Sprintf("#%d", n))
			} else {
				links = append(links, "?")
			}
		}
		if len(links) > 0 {
			fmt.Fprintf(&b, " links=%s", strings.Join(links, ","))
		}
		b.WriteString("\n")
	}
	return b.String()
}
