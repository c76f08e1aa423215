package aggregate_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/eventlite/eventlite/aggregate"
	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/storetest"
)

// A counter: the smallest aggregate that shows lost or doubled commands.
type Added struct {
	N  int    `json:"n"`
	By string `json:"by"`
}
type Add struct {
	N  int    `json:"n"`
	By string `json:"by"`
	// SentAt is filled by the caller on each try: not part of the input.
	SentAt time.Time `json:"sent_at" idem:"-"`
}
type Counter struct {
	Total  int            `json:"total"`
	Events int            `json:"events"`
	By     map[string]int `json:"by"`
}

func counterRegistry() *envelope.Registry {
	var r envelope.Registry
	envelope.Register[Added](&r, "counter.added")
	return &r
}

func counterDef() aggregate.Definition[Counter] {
	return aggregate.Definition[Counter]{
		Name:     "counter",
		Registry: counterRegistry(),
		Initial:  func() Counter { return Counter{By: map[string]int{}} },
		Evolve: func(c Counter, ev aggregate.Event) Counter {
			a := ev.Payload.(Added)
			by := make(map[string]int, len(c.By)+1)
			for k, v := range c.By {
				by[k] = v
			}
			by[a.By] += a.N
			return Counter{Total: c.Total + a.N, Events: c.Events + 1, By: by}
		},
		Decide: func(c Counter, cmd aggregate.Command) ([]any, error) {
			a := cmd.Payload.(Add)
			if a.N <= 0 {
				return nil, errNonPositive
			}
			return []any{Added{N: a.N, By: a.By}}, nil
		},
	}
}

var errNonPositive = errors.New("add a positive number")

func newCounter(t testing.TB, s *store.Store, opts *aggregate.Options) *aggregate.Handler[Counter] {
	t.Helper()
	h, err := aggregate.New(s, counterDef(), opts)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func streamLen(t testing.TB, s *store.Store, tenant, stream string) int {
	t.Helper()
	v, err := s.StreamVersion(context.Background(), tenant, stream)
	if err != nil {
		t.Fatal(err)
	}
	return int(v)
}

func TestDecideErrorAppendsNothing(t *testing.T) {
	ctx := context.Background()
	s := storetest.MustOpen(t, nil)
	h := newCounter(t, s, nil)
	_, err := h.Handle(ctx, aggregate.Command{Stream: "c", OperationID: "op", Payload: Add{N: -1}})
	if err != errNonPositive {
		t.Fatalf("Decide's error must come back unchanged, got %v", err)
	}
	if n := streamLen(t, s, "default", "c"); n != 0 {
		t.Errorf("appended %d events", n)
	}
	// A refused command records no operation: the same id may carry a fixed input.
	if _, err := h.Handle(ctx, aggregate.Command{Stream: "c", OperationID: "op", Payload: Add{N: 1}}); err != nil {
		t.Errorf("after a refusal the operation id is still free: %v", err)
	}
}

func TestCorrelationAndCausation(t *testing.T) {
	ctx := context.Background()
	s := storetest.MustOpen(t, nil)
	h := newCounter(t, s, nil)
	res, err := h.Handle(ctx, aggregate.Command{Stream: "c", ID: "cmd-1", CorrelationID: "corr-9", Payload: Add{N: 1}})
	if err != nil {
		t.Fatal(err)
	}
	for e, err := range s.ReadStream(ctx, "default", "c", store.ReadStreamOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		if e.CorrelationID != "corr-9" || e.CausationID != "cmd-1" || e.ID != res.EventIDs[0] {
			t.Errorf("event %s: correlation %q causation %q", e.ID, e.CorrelationID, e.CausationID)
		}
	}
	// Defaults: the command id is the operation id, the correlation id the command id.
	if _, err := h.Handle(ctx, aggregate.Command{Stream: "d", OperationID: "op-7", Payload: Add{N: 1}}); err != nil {
		t.Fatal(err)
	}
	for e, err := range s.ReadStream(ctx, "default", "d", store.ReadStreamOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		if e.CorrelationID != "op-7" || e.CausationID != "op-7" {
			t.Errorf("defaults: correlation %q causation %q", e.CorrelationID, e.CausationID)
		}
	}
}

// TestHotAggregate: 16 goroutines send commands to one aggregate. Every
// accepted command is applied exactly once, none is lost, versions are gap
// free (the storetest cleanup checks the log).
func TestHotAggregate(t *testing.T) {
	ctx := context.Background()
	s := storetest.MustOpen(t, nil)
	h := newCounter(t, s, &aggregate.Options{MaxAttempts: 1000})
	const senders = 16
	perSender := 40
	if testing.Short() {
		perSender = 8
	}
	var accepted atomic.Int64
	var wg sync.WaitGroup
	for w := range senders {
		wg.Go(func() {
			for i := range perSender {
				_, err := h.Handle(ctx, aggregate.Command{Stream: "hot", OperationID: fmt.Sprintf("w%d-%d", w, i), Payload: Add{N: 1, By: fmt.Sprint(w)}})
				if err != nil {
					t.Errorf("sender %d command %d: %v", w, i, err)
					return
				}
				accepted.Add(1)
			}
		})
	}
	wg.Wait()
	c, v, err := h.Load(ctx, "default", "hot")
	if err != nil {
		t.Fatal(err)
	}
	if int64(c.Total) != accepted.Load() || v != accepted.Load() {
		t.Errorf("total %d, version %d, accepted %d", c.Total, v, accepted.Load())
	}
	for w := range senders {
		if c.By[fmt.Sprint(w)] != perSender {
			t.Errorf("sender %d applied %d times, want %d", w, c.By[fmt.Sprint(w)], perSender)
		}
	}
}

// TestConflictRetryBound: with one attempt, a command that loses the race
// reports the conflict and appends nothing; no stale decision lands.
func TestConflictRetryBound(t *testing.T) {
	ctx := context.Background()
	s := storetest.MustOpen(t, nil)
	h := newCounter(t, s, &aggregate.Options{MaxAttempts: 1})
	var wg sync.WaitGroup
	var ok, conflicts atomic.Int64
	rounds := 20
	if testing.Short() {
		rounds = 5
	}
	for range rounds {
		for range 8 {
			wg.Go(func() {
				_, err := h.Handle(ctx, aggregate.Command{Stream: "c", Payload: Add{N: 1}})
				switch {
				case err == nil:
					ok.Add(1)
				case errors.Is(err, store.ErrConflict):
					conflicts.Add(1)
				default:
					t.Error(err)
				}
			})
		}
		wg.Wait()
	}
	c, _, _ := h.Load(ctx, "default", "c")
	if int64(c.Total) != ok.Load() {
		t.Errorf("total %d, accepted %d (conflicts %d)", c.Total, ok.Load(), conflicts.Load())
	}
	t.Logf("%d accepted, %d conflicts", ok.Load(), conflicts.Load())
}

func TestIdempotency(t *testing.T) {
	ctx := context.Background()
	t.Run("retry after a lost reply", func(t *testing.T) {
		s := storetest.MustOpen(t, nil)
		h := newCounter(t, s, nil)
		first, err := h.Handle(ctx, aggregate.Command{Stream: "c", OperationID: "op-1", Payload: Add{N: 5, SentAt: time.Unix(1, 0)}})
		if err != nil {
			t.Fatal(err)
		}
		// The retry's SentAt differs: volatile, not part of the input.
		again, err := h.Handle(ctx, aggregate.Command{Stream: "c", OperationID: "op-1", Payload: Add{N: 5, SentAt: time.Unix(2, 0)}})
		if err != nil {
			t.Fatal(err)
		}
		if !again.Replayed || first.Replayed {
			t.Errorf("replayed flags: first %v, retry %v", first.Replayed, again.Replayed)
		}
		again.Replayed = false
		if diff := cmp.Diff(first, again); diff != "" {
			t.Errorf("retry result (-first +retry):\n%s", diff)
		}
		if n := streamLen(t, s, "default", "c"); n != 1 {
			t.Errorf("%d events, want 1", n)
		}
	})
	t.Run("mismatched input", func(t *testing.T) {
		s := storetest.MustOpen(t, nil)
		h := newCounter(t, s, nil)
		if _, err := h.Handle(ctx, aggregate.Command{Stream: "c", OperationID: "op-1", Payload: Add{N: 5}}); err != nil {
			t.Fatal(err)
		}
		// The message names what differs, with both values, and never
		// shows the data.
		type Sub struct {
			N int `json:"n"`
		}
		for name, c := range map[string]struct {
			cmd  aggregate.Command
			want string
		}{
			"other content": {aggregate.Command{Stream: "c", OperationID: "op-1", Payload: Add{N: 6}},
				`operation "op-1" (tenant default) was already done with a different input: the data differs (the ledger keeps its hash, not the data): use a new operation id for a new operation`},
			"other stream": {aggregate.Command{Stream: "d", OperationID: "op-1", Payload: Add{N: 5}},
				`operation "op-1" (tenant default) was already done with a different input: the stream differs (stored "c", given "d"): use a new operation id for a new operation`},
			"other type": {aggregate.Command{Stream: "c", OperationID: "op-1", Payload: Sub{N: 5}},
				`operation "op-1" (tenant default) was already done with a different input: the type differs (stored counter.Add, given counter.Sub): use a new operation id for a new operation`},
			"other stream and type": {aggregate.Command{Stream: "d", OperationID: "op-1", Payload: Sub{N: 5}},
				`operation "op-1" (tenant default) was already done with a different input: the stream differs (stored "c", given "d"); the type differs (stored counter.Add, given counter.Sub): use a new operation id for a new operation`},
		} {
			cmd := c.cmd
			_, err := h.Handle(ctx, cmd)
			var me *store.IdempotencyMismatchError
			if !errors.Is(err, store.ErrIdempotencyMismatch) || !errors.As(err, &me) || me.OperationID != "op-1" {
				t.Errorf("%s: want IdempotencyMismatchError, got %v", name, err)
			} else if err.Error() != c.want {
				t.Errorf("%s:\n got %s\nwant %s", name, err, c.want)
			}
			if !errors.Is(err, store.ErrInvalidEvent) || store.Retryable(err) {
				t.Errorf("%s: a mismatch is permanent bad input: %v", name, err)
			}
		}
		if n := streamLen(t, s, "default", "c") + streamLen(t, s, "default", "d"); n != 1 {
			t.Errorf("%d events, want 1", n)
		}
	})
	t.Run("tenants do not share keys", func(t *testing.T) {
		s := storetest.MustOpen(t, nil)
		h := newCounter(t, s, nil)
		for _, tenant := range []string{"A", "B"} {
			res, err := h.Handle(ctx, aggregate.Command{Tenant: tenant, Stream: "c", OperationID: "same", Payload: Add{N: 1}})
			if err != nil || res.Replayed {
				t.Fatalf("tenant %s: %+v %v", tenant, res, err)
			}
		}
		if streamLen(t, s, "A", "c") != 1 || streamLen(t, s, "B", "c") != 1 {
			t.Error("each tenant's operation runs once")
		}
	})
	t.Run("concurrent duplicates", func(t *testing.T) {
		s := storetest.MustOpen(t, nil)
		h := newCounter(t, s, &aggregate.Options{MaxAttempts: 100})
		var wg sync.WaitGroup
		results := make([]aggregate.Result, 16)
		for i := range results {
			wg.Go(func() {
				r, err := h.Handle(ctx, aggregate.Command{Stream: "c", OperationID: "op", Payload: Add{N: 1}})
				if err != nil {
					t.Error(err)
				}
				results[i] = r
			})
		}
		wg.Wait()
		executed := 0
		for _, r := range results {
			if !r.Replayed {
				executed++
			}
			if r.Version != 1 || len(r.Positions) != 1 || r.Positions[0] != results[0].Positions[0] {
				t.Errorf("result %+v differs from the first", r)
			}
		}
		if executed != 1 || streamLen(t, s, "default", "c") != 1 {
			t.Errorf("%d executions, %d events; want 1 and 1", executed, streamLen(t, s, "default", "c"))
		}
	})
}

// TestManyOperations: 10,000 operations with 30% duplicates over 3
// tenants; executions equal the distinct (tenant, operation id) pairs.
func TestManyOperations(t *testing.T) {
	ctx := context.Background()
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	n := 10000
	if testing.Short() {
		n = 600
	}
	s := storetest.MustOpen(t, nil)
	h := newCounter(t, s, &aggregate.Options{MaxAttempts: 100})
	type key struct{ tenant, op string }
	var sent []key
	distinct := map[key]bool{}
	tenants := []string{"t1", "t2", "t3"}
	for len(sent) < n {
		var k key
		if len(sent) > 0 && rng.IntN(100) < 30 {
			k = sent[rng.IntN(len(sent))]
		} else {
			k = key{tenants[rng.IntN(3)], fmt.Sprintf("op-%d", len(sent))}
		}
		sent = append(sent, k)
		distinct[k] = true
	}
	var executed atomic.Int64
	var wg sync.WaitGroup
	work := make(chan key)
	for range 8 {
		wg.Go(func() {
			for k := range work {
				r, err := h.Handle(ctx, aggregate.Command{Tenant: k.tenant, Stream: "c-" + k.op[len(k.op)-1:], OperationID: k.op, Payload: Add{N: 1}})
				if err != nil {
					t.Error(err)
					continue
				}
				if !r.Replayed {
					executed.Add(1)
				}
			}
		})
	}
	for _, k := range sent {
		work <- k
	}
	close(work)
	wg.Wait()
	if int(executed.Load()) != len(distinct) {
		t.Errorf("%d executions, %d distinct operations", executed.Load(), len(distinct))
	}
	total := 0
	for _, tenant := range tenants {
		for si, err := range s.Streams(ctx, tenant) {
			if err != nil {
				t.Fatal(err)
			}
			total += int(si.Version)
		}
	}
	if total != len(distinct) {
		t.Errorf("%d events, %d distinct operations", total, len(distinct))
	}
}
