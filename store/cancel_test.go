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

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/storetest"
)

// cancelCall is one call of TestCancelAtRandom: an append or an Update,
// and when its caller's context is cancelled.
type cancelCall struct {
	update bool
	when   string // "", "before", "in-read", "in-write", "after", "race"
	key    string // the Update's rows in marks, and its hook
	ids    []string
	err    error
	cancel bool // whether cancel was called at all
}

var cancelModes = map[bool][]string{
	false: {"", "", "before", "race"},
	true:  {"", "before", "in-read", "in-write", "after", "race"},
}

// TestCancelAtRandom: callers cancelled at random points (before they
// submit, while a statement of their Update closure runs, after it, or
// from another goroutine at any time) among concurrent appends and
// Updates that share group commits. Every call that returned nil is
// stored whole, every call that returned an error stored nothing, every
// call that was not cancelled succeeded, and the log's invariants hold.
func TestCancelAtRandom(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv("EVENTLITE_SEED"); v != "" {
		fmt.Sscan(v, &seed)
	}
	// The seed decides the calls and their cancel points; the scheduler
	// decides the groups.
	t.Logf("seed %d (EVENTLITE_SEED=%d to draw the same calls)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, 10))
	ctx := context.Background()
	s := storetest.MustOpen(t, nil)
	if err := s.Update(ctx, func(tx *store.Tx) error {
		_, err := tx.ExecContext(ctx, `CREATE TABLE marks (k TEXT PRIMARY KEY)`)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	rounds, callers, long := 40, 24, int64(3000)
	if testing.Short() {
		rounds, callers, long = 8, 12, 300
	}
	outcomes := map[string]int{} // "update/in-read nil" and so on, for the log
	defer func() { t.Logf("outcomes: %v", outcomes) }()
	for round := range rounds {
		calls := make([]*cancelCall, callers)
		for i := range calls {
			c := &cancelCall{update: rng.IntN(2) == 0, key: fmt.Sprintf("r%d-c%d", round, i)}
			modes := cancelModes[c.update]
			c.when = modes[rng.IntN(len(modes))]
			calls[i] = c
		}
		// The random parts of each call, drawn here so the seed decides them.
		spins := make([]int, callers)
		for i := range spins {
			spins[i] = rng.IntN(200)
		}
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i, c := range calls {
			wg.Go(func() {
				cctx, cancel := context.WithCancel(ctx)
				defer cancel()
				doCancel := func() { c.cancel = true; cancel() }
				switch c.when {
				case "before":
					doCancel()
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
					e := cancelEvent(t, i)
					c.ids = []string{e.ID}
					_, c.err = s.Append(cctx, "default", fmt.Sprintf("s%d", i%4), store.Any, e)
					return
				}
				e := cancelEvent(t, i)
				c.ids = []string{e.ID}
				defer store.SetTestHook(c.key, func(x int64) error {
					if x == long/2 && (c.when == "in-read" || c.when == "in-write") {
						doCancel()
					}
					return nil
				})()
				c.err = s.Update(cctx, func(tx *store.Tx) error {
					if _, err := tx.ExecContext(cctx, `INSERT INTO marks (k) VALUES (?)`, c.key); err != nil {
						return err
					}
					if _, err := tx.Append(cctx, "default", fmt.Sprintf("u%d", i%3), store.Any, e); err != nil {
						return err
					}
					switch c.when {
					case "in-write":
						q, args := store.LongWrite("marks", long, c.key)
						if _, err := tx.ExecContext(cctx, q, args...); err != nil {
							return err
						}
					default:
						q, args := store.LongRead(long, c.key)
						var n int
						if err := tx.QueryRowContext(cctx, q, args...).Scan(&n); err != nil {
							return err
						}
					}
					if c.when == "after" {
						doCancel()
					}
					// Errors from here on are ignored: the closure
					// reports success, the writer must still see the
					// cancelled caller.
					_, _ = tx.ExecContext(cctx, `INSERT INTO marks (k) VALUES (?)`, c.key+"/end")
					var n int
					_ = tx.QueryRowContext(cctx, `SELECT count(*) FROM marks`).Scan(&n)
					return nil
				})
			})
		}
		close(start)
		wg.Wait()
		checkCancelRound(t, s, round, calls)
		for _, c := range calls {
			k := "append/"
			if c.update {
				k = "update/"
			}
			k += c.when
			if c.err != nil {
				k += " error"
			} else {
				k += " nil"
			}
			outcomes[k]++
		}
		if t.Failed() {
			t.Fatalf("round %d failed (seed %d)", round, seed)
		}
	}
}

func cancelEvent(t *testing.T, i int) envelope.Event {
	e, err := envelope.New("cancel.test", map[string]int{"i": i})
	if err != nil {
		t.Error(err)
	}
	e.Source = "/test"
	e.ID = ulid.Make().String()
	return e
}

func checkCancelRound(t *testing.T, s *store.Store, round int, calls []*cancelCall) {
	t.Helper()
	ctx := context.Background()
	err := s.View(ctx, func(tx *store.ReadTx) error {
		for i, c := range calls {
			what := fmt.Sprintf("round %d call %d (update %v, cancel %q)", round, i, c.update, c.when)
			var events, marks, ends int
			for _, id := range c.ids {
				var n int
				if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM events WHERE event_id = ?`, id).Scan(&n); err != nil {
					return err
				}
				events += n
			}
			if c.update {
				if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM marks WHERE k = ?`, c.key).Scan(&marks); err != nil {
					return err
				}
				if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM marks WHERE k = ?`, c.key+"/end").Scan(&ends); err != nil {
					return err
				}
			}
			switch {
			case c.err == nil:
				if events != len(c.ids) || (c.update && (marks != 1 || ends != 1)) {
					t.Errorf("%s returned nil, but stored %d of %d events, mark %d, end mark %d", what, events, len(c.ids), marks, ends)
				}
			default:
				if events != 0 || marks != 0 || ends != 0 {
					t.Errorf("%s returned %v, but stored %d events, mark %d, end mark %d", what, c.err, events, marks, ends)
				}
				if !c.cancel {
					t.Errorf("%s was not cancelled, yet failed: %v", what, c.err)
				} else if !errors.Is(c.err, context.Canceled) {
					t.Errorf("%s: got %v, want an error matching context.Canceled", what, c.err)
				}
			}
			if c.cancel && c.when != "race" && c.err == nil {
				t.Errorf("%s was cancelled before it returned, yet returned nil", what)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.CheckInvariants(ctx); err != nil {
		t.Error(err)
	}
}

// TestCancelLoneUpdateInterrupted: an Update alone in its transaction may
// be interrupted in the middle of a statement; it reports its context's
// error and nothing of it is stored.
func TestCancelLoneUpdateInterrupted(t *testing.T) {
	ctx := context.Background()
	s := storetest.MustOpen(t, nil)
	if err := s.Update(ctx, func(tx *store.Tx) error {
		_, err := tx.ExecContext(ctx, `CREATE TABLE marks (k TEXT PRIMARY KEY)`)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	for _, kind := range []string{"read", "write"} {
		t.Run(kind, func(t *testing.T) {
			cctx, cancel := context.WithCancel(ctx)
			defer cancel()
			key := "lone-" + kind
			const at = 100
			ranOn := false
			// Without an interrupt the statement would run to its end,
			// a billion rows: it fails itself well before that.
			defer store.SetTestHook(key, func(x int64) error {
				switch {
				case x == at:
					cancel()
				case x == at+1_000_000:
					ranOn = true
					return errors.New("the statement was not interrupted")
				}
				return nil
			})()
			err := s.Update(cctx, func(tx *store.Tx) error {
				if _, err := tx.ExecContext(cctx, `INSERT INTO marks (k) VALUES (?)`, key); err != nil {
					return err
				}
				if kind == "read" {
					q, args := store.LongRead(1_000_000_000, key)
					var n int
					return tx.QueryRowContext(cctx, q, args...).Scan(&n)
				}
				q, args := store.LongWrite("marks", 1_000_000_000, key)
				_, err := tx.ExecContext(cctx, q, args...)
				return err
			})
			if !errors.Is(err, context.Canceled) {
				t.Errorf("got %v, want an error matching context.Canceled", err)
			}
			if ranOn {
				t.Error("the statement of a cancelled Update alone in its transaction ran on")
			}
			var n int
			if err := s.View(ctx, func(tx *store.ReadTx) error {
				return tx.QueryRowContext(ctx, `SELECT count(*) FROM marks WHERE k LIKE ?`, key+"%").Scan(&n)
			}); err != nil {
				t.Fatal(err)
			}
			if n != 0 {
				t.Errorf("the cancelled Update left %d rows", n)
			}
		})
	}
}
