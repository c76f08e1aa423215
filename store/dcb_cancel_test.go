package store_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/storetest"
)

// streamHooks is a span processor that calls, at the start and the end
// of an append span, the hook registered for the span's stream: a way
// into the middle of an append (its start runs before the append reaches
// the writer; the end of a tx.Append's span, after its statements and
// before the transaction commits).
type streamHooks struct{ m sync.Map } // stream -> func(point string)

func (h *streamHooks) call(s sdktrace.ReadOnlySpan, point string) {
	if s.Name() != "append" {
		return
	}
	for _, a := range s.Attributes() {
		if a.Key == "eventlite.stream" {
			if fn, ok := h.m.Load(a.Value.AsString()); ok {
				fn.(func(string))(point)
			}
		}
	}
}

func (h *streamHooks) OnStart(_ context.Context, s sdktrace.ReadWriteSpan) { h.call(s, "span-start") }
func (h *streamHooks) OnEnd(s sdktrace.ReadOnlySpan)                       { h.call(s, "span-end") }
func (h *streamHooks) Shutdown(context.Context) error                      { return nil }
func (h *streamHooks) ForceFlush(context.Context) error                    { return nil }

// condCall is one call of TestConditionalAppendCancelAtRandom.
type condCall struct {
	update bool   // a tx.Append inside an Update (with a plain append beside it)
	fail   bool   // the condition fails: an event matching it is stored
	when   string // "", "before", "span-start", "span-end", "after", "race"
	ids    []string
	err    error
	cancel bool
}

var condCancelModes = map[bool][]string{
	false: {"", "before", "span-start", "race"},
	true:  {"", "before", "span-start", "span-end", "after", "race"},
}

// TestConditionalAppendCancelAtRandom: conditional appends, alone and in
// Update closures, sharing group commits, their callers cancelled at
// random points (before they submit, as the append starts, once a
// tx.Append's statements ran, after it inside the closure, or from
// another goroutine at any time). Every call that returned nil stored
// everything and had a condition that holds; every call that returned an
// error stored nothing, and its error matches context.Canceled, or is
// the *store.ConditionError of a condition that fails; a call not
// cancelled whose condition holds succeeded. Both engines.
func TestConditionalAppendCancelAtRandom(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv("EVENTLITE_SEED"); v != "" {
		fmt.Sscan(v, &seed)
	}
	t.Logf("seed %d (EVENTLITE_SEED=%d to draw the same calls)", seed, seed)
	for _, eng := range []string{"sqlite", "postgres"} {
		t.Run(eng, func(t *testing.T) {
			hooks := &streamHooks{}
			tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(hooks))
			defer tp.Shutdown(context.Background())
			opts := &store.Options{TracerProvider: tp}
			var s *store.Store
			if eng == "sqlite" {
				s = storetest.MustOpen(t, opts)
			} else {
				s = openAddr(t, storetest.PostgresSchema(t, storetest.PostgresBase(t)), opts)
			}
			condAppendCancelRounds(t, s, hooks, rand.New(rand.NewPCG(seed, 40)))
		})
	}
}

func condAppendCancelRounds(t *testing.T, s *store.Store, hooks *streamHooks, rng *rand.Rand) {
	ctx := context.Background()
	rounds, callers := 20, 16
	if testing.Short() {
		rounds, callers = 5, 8
	}
	outcomes := map[string]int{}
	defer func() { t.Logf("outcomes: %v", outcomes) }()
	for round := range rounds {
		calls := make([]*condCall, callers)
		spins := make([]int, callers)
		for i := range calls {
			c := &condCall{update: rng.IntN(2) == 0, fail: rng.IntN(4) == 0}
			modes := condCancelModes[c.update]
			c.when = modes[rng.IntN(len(modes))]
			calls[i] = c
			spins[i] = rng.IntN(200)
			if c.fail {
				// The event the condition finds.
				specAppend(t, s, fmt.Sprintf("f-r%d-c%d", round, i), specEvent(t, "cond.seed", fmt.Sprintf("f:r%d-c%d", round, i)))
			}
		}
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i, c := range calls {
			stream := fmt.Sprintf("r%d-c%d", round, i)
			tag := "f:" + stream
			if !c.fail {
				tag = "c:" + stream
			}
			cond := store.Condition{Query: store.Query{Items: []store.QueryItem{{Tags: []string{tag}}}}}
			e := specEvent(t, "cond.test", "c:"+stream)
			plain := specEvent(t, "cond.plain")
			e.ID, plain.ID = ulid.Make().String(), ulid.Make().String()
			c.ids = []string{e.ID}
			if c.update {
				c.ids = append(c.ids, plain.ID)
			}
			wg.Go(func() {
				cctx, cancel := context.WithCancel(ctx)
				defer cancel()
				doCancel := func() { c.cancel = true; cancel() }
				switch c.when {
				case "before":
					doCancel()
				case "span-start", "span-end":
					hooks.m.Store(stream, func(point string) {
						if point == c.when {
							doCancel()
						}
					})
					defer hooks.m.Delete(stream)
				case "race":
					c.cancel = true
					go func() {
						for range spins[i] {
							runtime.Gosched()
						}
						cancel()
					}()
				}
				<-start
				if !c.update {
					_, c.err = s.Append(cctx, "default", stream, store.Any.If(cond), e)
					return
				}
				c.err = s.Update(cctx, func(tx *store.Tx) error {
					if _, err := tx.Append(cctx, "default", stream+"-plain", store.Any, plain); err != nil {
						return err
					}
					if _, err := tx.Append(cctx, "default", stream, store.Any.If(cond), e); err != nil {
						return err
					}
					if c.when == "after" {
						doCancel()
					}
					return nil
				})
			})
		}
		close(start)
		wg.Wait()
		for i, c := range calls {
			what := fmt.Sprintf("round %d call %d (update %v, fail %v, cancel %q)", round, i, c.update, c.fail, c.when)
			stored := 0
			for _, id := range c.ids {
				if _, err := s.EventByID(ctx, "default", id); err == nil {
					stored++
				} else if !errors.Is(err, store.ErrNotFound) {
					t.Fatal(err)
				}
			}
			var ce *store.ConditionError
			switch {
			case c.err == nil:
				if stored != len(c.ids) {
					t.Errorf("%s returned nil, but stored %d of %d events", what, stored, len(c.ids))
				}
				if c.fail {
					t.Errorf("%s returned nil, but its condition fails", what)
				}
				if c.cancel && c.when != "race" {
					t.Errorf("%s was cancelled before it returned, yet returned nil", what)
				}
			default:
				if stored != 0 {
					t.Errorf("%s returned %v, but stored %d events", what, c.err, stored)
				}
				switch {
				case errors.As(c.err, &ce):
					if !c.fail {
						t.Errorf("%s: condition error %v, but its condition holds", what, c.err)
					}
				case !c.cancel:
					t.Errorf("%s was not cancelled, yet failed: %v", what, c.err)
				case !errors.Is(c.err, context.Canceled):
					t.Errorf("%s: got %v, want an error matching context.Canceled", what, c.err)
				}
			}
			k := fmt.Sprintf("update=%v fail=%v %s", c.update, c.fail, c.when)
			if c.err != nil {
				k += " error"
			} else {
				k += " nil"
			}
			outcomes[k]++
		}
		if err := s.CheckInvariants(ctx); err != nil {
			t.Fatal(err)
		}
		if t.Failed() {
			t.Fatalf("round %d failed", round)
		}
	}
}
