package decision_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/eventlite/eventlite/decision"
	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/store"
)

// The cancellation tests book tickets from a pool: the boundary is the
// pool's tag, every booking adds one; a command may book into one
// stream or two.

type TicketBooked struct {
	Pool string `json:"pool"`
	By   string `json:"by"`
}

type BookTicket struct {
	Pool string `json:"pool"`
	Two  bool   `json:"two"` // book into two streams at once
}

func ticketRegistry() *envelope.Registry {
	var r envelope.Registry
	r.SetSource("/tickets")
	envelope.Register[TicketBooked](&r, "ticket.booked")
	return &r
}

// hooks is where a test stops a decision half-way: at is called with
// the point reached and the attempt it belongs to.
type hooks struct {
	at      atomic.Pointer[func(point string)]
	attempt atomic.Int32
}

func (h *hooks) call(point string) {
	if f := h.at.Load(); f != nil {
		(*f)(point)
	}
}

// spanHook is a span processor that reports the start and the end of
// the store's append spans to hooks: a way into the middle of the append
// the decision makes inside its transaction.
type spanHook struct{ h *hooks }

func (p spanHook) OnStart(_ context.Context, s sdktrace.ReadWriteSpan) {
	if s.Name() == "append" {
		p.h.call("append-start")
	}
}

func (p spanHook) OnEnd(s sdktrace.ReadOnlySpan) {
	if s.Name() == "append" {
		p.h.call("append-end")
	}
}
func (spanHook) Shutdown(context.Context) error   { return nil }
func (spanHook) ForceFlush(context.Context) error { return nil }

func newBookTicket(t testing.TB, s *store.Store, hk *hooks, opts *decision.Options) *decision.Handler[int, BookTicket] {
	t.Helper()
	reg := ticketRegistry()
	var ev decision.Evolvers[int]
	decision.On(&ev, func(n int, _ decision.EventOf[TicketBooked]) int {
		hk.call("evolve")
		return n + 1
	})
	h, err := decision.New(s, decision.Definition[int, BookTicket]{
		Name:     "book_ticket",
		Registry: reg,
		Evolvers: &ev,
		Initial: func(BookTicket) int {
			hk.attempt.Add(1)
			return 0
		},
		Query: func(c BookTicket) store.Query {
			return store.Query{Items: []store.QueryItem{{Types: []string{"ticket.booked"}, Tags: []string{"pool:" + c.Pool}}}}
		},
		Decide: func(n int, c decision.Command[BookTicket]) ([]decision.Event, error) {
			hk.call("decide")
			ev := func(stream string) decision.Event {
				return decision.Event{Stream: stream, Tags: []string{"pool:" + c.Payload.Pool, "by:" + c.Payload.Pool},
					Payload: TicketBooked{Pool: c.Payload.Pool, By: c.Payload.Pool}}
			}
			out := []decision.Event{ev(fmt.Sprintf("ticket-%s-%d", c.Payload.Pool, n))}
			if c.Payload.Two {
				out = append(out, ev(fmt.Sprintf("receipt-%s-%d", c.Payload.Pool, n)))
			}
			return out, nil
		},
	}, opts)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// seedPool appends n bookings of pool made by someone else (tagged with
// the pool, not "by:pool").
func seedPool(t testing.TB, s *store.Store, pool string, n int) {
	t.Helper()
	reg := ticketRegistry()
	for i := range n {
		e, err := reg.Encode("ticket.booked", TicketBooked{Pool: pool, By: "seed"})
		if err != nil {
			t.Fatal(err)
		}
		e.Tags = []string{"pool:" + pool}
		if _, err := s.Append(context.Background(), "default", fmt.Sprintf("seed-%s-%d", pool, i), store.Any, e); err != nil {
			t.Fatal(err)
		}
	}
}

// TestCancelAtEveryPoint: a command whose context ends before Handle,
// while its events are read and folded, in Decide, as its append starts
// or once an append's statements ran (before the commit), in its first
// attempt or in the attempt after a condition failed, returns an error
// matching context.Canceled and stores nothing: no event, no ledger
// entry (the same operation then runs once, afresh). A context that ends
// as the commit lands may go either way; the answer is the truth: nil
// with every event stored, or the error with none. Both engines, with
// and without an operation id, one stream or two.
func TestCancelAtEveryPoint(t *testing.T) {
	onEngines(t, func(t *testing.T, eng engine) {
		hk := &hooks{}
		tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spanHook{hk}))
		defer tp.Shutdown(context.Background())
		s, _ := eng.open(t, &store.Options{TracerProvider: tp})
		h := newBookTicket(t, s, hk, nil)
		type point struct {
			at      string // "", "evolve", "decide", "append-start", "append-end", "commit"
			attempt int32  // the attempt cancelled; 2 after a condition failure
			nth     int    // cancel at the nth time the point is reached in that attempt
		}
		points := []point{
			{"", 1, 1}, // before Handle
			{"evolve", 1, 1},
			{"evolve", 1, 2},
			{"decide", 1, 1},
			{"append-start", 1, 1},
			{"append-end", 1, 1},
			{"evolve", 2, 1},
			{"decide", 2, 1},
			{"append-start", 2, 1},
			{"append-end", 2, 1},
			{"commit", 1, 1},
		}
		for _, p := range points {
			for _, two := range []bool{false, true} {
				for _, withOp := range []bool{false, true} {
					name := fmt.Sprintf("%s-%d-%d/two=%v/op=%v", p.at, p.attempt, p.nth, two, withOp)
					if p.at == "" {
						name = fmt.Sprintf("before/two=%v/op=%v", two, withOp)
					}
					t.Run(name, func(t *testing.T) {
						pool := fmt.Sprintf("p%d", poolSeq.Add(1))
						seedPool(t, s, pool, 2)
						ctx, cancel := context.WithCancel(context.Background())
						defer cancel()
						hk.attempt.Store(0)
						var reached, cancelled atomic.Int32
						var raced atomic.Bool
						var mu sync.Mutex
						var fp *func(string)
						f := func(at string) {
							mu.Lock()
							defer mu.Unlock()
							if at == "decide" && p.attempt == 2 && hk.attempt.Load() == 1 && raced.CompareAndSwap(false, true) {
								// Another writer books from the pool between
								// the first attempt's read and its append: the
								// condition fails and the decision runs again.
								hk.at.Store(nil)
								e, err := ticketRegistry().Encode("ticket.booked", TicketBooked{Pool: pool, By: "race"})
								if err != nil {
									t.Error(err)
								}
								e.Tags = []string{"pool:" + pool}
								if _, err := s.Append(context.Background(), "default", "race-"+pool, store.Any, e); err != nil {
									t.Error(err)
								}
								hk.at.Store(fp)
								return
							}
							if at != p.at || hk.attempt.Load() != p.attempt {
								return
							}
							if int(reached.Add(1)) == p.nth {
								cancelled.Add(1)
								cancel()
							}
						}
						fp = &f
						var changed <-chan struct{}
						switch p.at {
						case "":
							cancel()
							cancelled.Add(1)
						case "commit":
							// Cancel as soon as a commit is announced:
							// the decision's, or the race loses.
							changed = s.Changed()
							go func() {
								select {
								case <-changed:
									cancelled.Add(1)
									cancel()
								case <-ctx.Done():
								}
							}()
						}
						hk.at.Store(fp)
						defer hk.at.Store(nil)
						cmd := decision.Command[BookTicket]{Payload: BookTicket{Pool: pool, Two: two}}
						if withOp {
							cmd.OperationID = "op-" + pool
						}
						res, err := h.Handle(ctx, cmd)
						hk.at.Store(nil)
						cancel()
						stored := byTag(t, s, "default", "by:"+pool)
						want := 1
						if two {
							want = 2
						}
						if p.at != "commit" && cancelled.Load() == 0 {
							t.Fatalf("the cancel point was never reached (attempts %d)", hk.attempt.Load())
						}
						switch {
						case err == nil:
							if p.at != "commit" {
								t.Fatalf("cancelled at %s in attempt %d, Handle returned nil (%+v)", p.at, p.attempt, res)
							}
							if len(stored) != want || len(res.Positions) != want {
								t.Fatalf("Handle returned nil with %d positions; %d events stored, want %d", len(res.Positions), len(stored), want)
							}
							for i, e := range stored {
								if res.Positions[i] != e.Position || res.EventIDs[i] != e.ID {
									t.Errorf("result names event %d at %d, the store holds %s at %d", i, res.Positions[i], e.ID, e.Position)
								}
							}
						default:
							if !errors.Is(err, context.Canceled) {
								t.Fatalf("got %v, want an error matching context.Canceled", err)
							}
							if len(stored) != 0 {
								t.Fatalf("Handle returned %v, but %d events are stored", err, len(stored))
							}
						}
						if !withOp {
							return
						}
						// The ledger tells the same story: a retry replays
						// a committed command and runs a cancelled one.
						again, err2 := h.Handle(context.Background(), cmd)
						if err2 != nil {
							t.Fatalf("the retry: %v", err2)
						}
						if again.Replayed != (err == nil) {
							t.Fatalf("the retry replayed %v; the first call returned %v", again.Replayed, err)
						}
						if n := len(byTag(t, s, "default", "by:"+pool)); n != want {
							t.Fatalf("after the retry %d events are stored, want %d", n, want)
						}
					})
				}
			}
		}
	})
}

var poolSeq atomic.Int64
