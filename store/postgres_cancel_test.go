package store_test

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/drivertest"
	"github.com/eventlite/eventlite/store/storetest"
)

// The cancellation tests of PostgreSQL. The store never hands a caller's
// context to pgx, which closes its connection when a statement's context
// ends: a caller's context is checked before each statement, a cancelled
// request is rolled back (alone, in its savepoint, when it shares a
// group), and the writer's session stays. To act while a statement of
// the store's writer runs, a test makes that statement wait for an
// advisory lock the test holds on a session of its own, sees the writer
// wait for it in pg_locks, cancels, and lets the statement go.

// pgCancel is a store on a fresh schema and what a cancellation test
// uses behind its back: a plain pool on the server, and a session of it
// that holds the advisory locks the store's statements wait for.
type pgCancel struct {
	t      *testing.T
	s      *store.Store
	db     *sql.DB
	schema string // unquoted
	keys   int64  // the first of this test's advisory lock keys
	next   atomic.Int64
	mu     sync.Mutex // one statement at a time on admin
	admin  *sql.Conn
}

// newPGCancel opens a store on a fresh schema. Its BusyTimeout (the
// session's lock_timeout, which an advisory lock wait counts against) is
// a minute unless opts says otherwise, and its clock (Options.Now) moves
// a microsecond at every reading, so that the recorded_at of an event
// names the transaction that stored it: the writer reads the clock once
// per transaction.
func newPGCancel(t *testing.T, opts *store.Options) *pgCancel {
	t.Helper()
	base := storetest.PostgresBase(t)
	addr := storetest.PostgresSchema(t, base)
	var o store.Options
	if opts != nil {
		o = *opts
	}
	if o.BusyTimeout == 0 {
		o.BusyTimeout = time.Minute
	}
	if o.Now == nil {
		var tick atomic.Int64
		start := time.Now()
		o.Now = func() time.Time { return start.Add(time.Duration(tick.Add(1)) * time.Microsecond) }
	}
	f := &pgCancel{t: t, s: openAddr(t, addr, &o), db: pgSQL(t, base), schema: strings.Trim(schemaOf(t, addr), `"`)}
	// Keys of the server's one advisory lock space, which other tests
	// on the same server share: random, below 2^31 (pg_locks then shows
	// a key as classid 0, objid key).
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	f.keys = 1<<20 + int64(binary.BigEndian.Uint32(b[:])%(1<<29))
	admin, err := f.db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	f.admin = admin
	// Before the store closes (cleanups run last first): ending the
	// session frees its locks, so no statement of the store waits on.
	t.Cleanup(func() { _ = admin.Close() })
	if err := f.s.Update(context.Background(), func(tx *store.Tx) error {
		_, err := tx.ExecContext(context.Background(), `CREATE TABLE marks (k TEXT PRIMARY KEY)`)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return f
}

// lock takes a new advisory lock key on the test's session and returns it.
func (f *pgCancel) lock() int64 {
	f.t.Helper()
	k := f.keys + f.next.Add(1)
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, err := f.admin.ExecContext(context.Background(), `SELECT pg_advisory_lock($1)`, k); err != nil {
		f.t.Fatalf("advisory lock %d: %v", k, err)
	}
	return k
}

// unlock frees key k. It may run on any goroutine.
func (f *pgCancel) unlock(k int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var ok bool
	if err := f.admin.QueryRowContext(context.Background(), `SELECT pg_advisory_unlock($1)`, k).Scan(&ok); err != nil || !ok {
		f.t.Errorf("advisory unlock %d: %v (held: %v)", k, err, ok)
	}
}

// awaitWriterWaits returns true once the store's writer session waits
// for advisory lock k, or false once done is closed first. It may run on
// any goroutine. A wait that has not begun yet is looked for again a
// millisecond later: the condition is observed, never assumed after a
// sleep.
func (f *pgCancel) awaitWriterWaits(k int64, done <-chan struct{}) bool {
	for {
		var n int
		if err := f.db.QueryRowContext(context.Background(), `SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
			WHERE a.application_name = $1 AND l.locktype = 'advisory' AND NOT l.granted
			AND l.classid::bigint = 0 AND l.objid::bigint = $2 AND l.objsubid = 1`, "eventlite writer "+f.schema, k).Scan(&n); err != nil {
			f.t.Errorf("pg_locks: %v", err)
			return false
		}
		if n > 0 {
			return true
		}
		select {
		case <-done:
			return false
		case <-time.After(time.Millisecond):
		}
	}
}

// writerPID is the backend pid of the store's writer session, 0 when it
// has none: it changes when the connection is dropped (and the writer
// takes a new one at its next write).
func (f *pgCancel) writerPID() int {
	f.t.Helper()
	rows, err := f.db.QueryContext(context.Background(), `SELECT pid FROM pg_stat_activity WHERE application_name = $1`, "eventlite writer "+f.schema)
	if err != nil {
		f.t.Fatal(err)
	}
	defer rows.Close()
	var pids []int
	for rows.Next() {
		var p int
		if err := rows.Scan(&p); err != nil {
			f.t.Fatal(err)
		}
		pids = append(pids, p)
	}
	if err := rows.Err(); err != nil {
		f.t.Fatal(err)
	}
	switch len(pids) {
	case 0:
		return 0 // none: its connection was closed, and no write since took a new one
	case 1:
		return pids[0]
	}
	f.t.Fatalf("writer sessions of schema %s: %v, want one", f.schema, pids)
	return 0
}

// pgStored is the log as a test checks it: how often each event id is
// stored and the recorded_at of each (the transaction that stored it).
type pgStored struct {
	count map[string]int
	at    map[string]int64
	n     int
}

// stored reads the whole log and the marks table, and reports a gap in
// the positions (they run 1..n).
func (f *pgCancel) stored() (pgStored, map[string]int) {
	f.t.Helper()
	ctx := context.Background()
	st := pgStored{count: map[string]int{}, at: map[string]int64{}}
	rows, err := f.db.QueryContext(ctx, `SELECT event_id, position, recorded_at FROM "`+f.schema+`".events ORDER BY position`)
	if err != nil {
		f.t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		var pos, at int64
		if err := rows.Scan(&id, &pos, &at); err != nil {
			f.t.Fatal(err)
		}
		st.n++
		if pos != int64(st.n) {
			f.t.Errorf("position %d is the log's event number %d: the positions have a gap", pos, st.n)
			st.n = int(pos)
		}
		st.count[id]++
		st.at[id] = at
	}
	if err := rows.Err(); err != nil {
		f.t.Fatal(err)
	}
	marks := map[string]int{}
	mrows, err := f.db.QueryContext(ctx, `SELECT k FROM "`+f.schema+`".marks`)
	if err != nil {
		f.t.Fatal(err)
	}
	defer mrows.Close()
	for mrows.Next() {
		var k string
		if err := mrows.Scan(&k); err != nil {
			f.t.Fatal(err)
		}
		marks[k]++
	}
	if err := mrows.Err(); err != nil {
		f.t.Fatal(err)
	}
	return st, marks
}

// pollUntil waits until cond holds, looking again every millisecond, for
// at most a minute (then the test fails: something is stuck).
func pollUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after a minute, still not: %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestPostgresCancelUpdateBetweenAppends: a caller's context cancelled
// inside an Update, between two of its appends. The second append does
// not run, Update returns context.Canceled whether the closure returns
// that error or ignores it, nothing of the Update is stored, the next
// append takes the next position, and the writer keeps its session.
func TestPostgresCancelUpdateBetweenAppends(t *testing.T) {
	for _, ignore := range []bool{false, true} {
		name := "closure returns the error"
		if ignore {
			name = "closure ignores the error"
		}
		t.Run(name, func(t *testing.T) {
			f := newPGCancel(t, nil)
			ctx := context.Background()
			drivertest.AppendN(t, f.s, "acme", "s", 2)
			pid := f.writerPID()
			cctx, cancel := context.WithCancel(ctx)
			defer cancel()
			var firstErr, secondErr error
			err := f.s.Update(cctx, func(tx *store.Tx) error {
				if _, err := tx.ExecContext(cctx, `INSERT INTO marks (k) VALUES ($1)`, "update"); err != nil {
					return err
				}
				if _, firstErr = tx.Append(cctx, "acme", "s", store.Any, pgEvent("first")); firstErr != nil {
					return firstErr
				}
				cancel()
				_, secondErr = tx.Append(cctx, "acme", "s", store.Any, pgEvent("second"))
				if ignore {
					return nil
				}
				return secondErr
			})
			if firstErr != nil {
				t.Fatalf("the append before the cancel: %v", firstErr)
			}
			if !errors.Is(secondErr, context.Canceled) {
				t.Errorf("the append after the cancel: got %v, want an error matching context.Canceled", secondErr)
			}
			if !errors.Is(err, context.Canceled) {
				t.Errorf("Update: got %v, want an error matching context.Canceled", err)
			}
			for _, id := range []string{"first", "second"} {
				if _, err := f.s.EventByID(ctx, "acme", id); !errors.Is(err, store.ErrNotFound) {
					t.Errorf("event %q of the cancelled Update: got %v, want ErrNotFound", id, err)
				}
			}
			res, err := f.s.Append(ctx, "acme", "s", store.Any, pgEvent("next"))
			if err != nil {
				t.Fatalf("the append after the cancelled Update: %v", err)
			}
			if p := res.Positions(); len(p) != 1 || p[0] != 3 || res.Version != 3 {
				t.Errorf("the append after the cancelled Update: positions %v, version %d; want [3], 3", p, res.Version)
			}
			st, marks := f.stored()
			if st.n != 3 || marks["update"] != 0 {
				t.Errorf("stored %d events and %d marks of the Update, want 3 and 0", st.n, marks["update"])
			}
			if got := f.writerPID(); got != pid {
				t.Errorf("the writer's session changed from pid %d to %d (0: none): the cancellation dropped its connection", pid, got)
			}
		})
	}
}

// TestPostgresCancelDeadlineInStatement: an Update's deadline passes
// while one of its statements runs. The statement completes (the store
// does not hand the deadline to pgx, which would close the writer's
// connection), Update returns an error matching
// context.DeadlineExceeded, nothing of it is stored, the writer keeps
// its session, and the next append succeeds.
//
// In "lock" the statement waits for an advisory lock the test frees only
// once the deadline has passed, which it saw the writer wait for: the
// deadline certainly passes inside the statement. In "pg_sleep" it
// sleeps half a second under a deadline of 100ms, as a caller's slow
// statement would.
func TestPostgresCancelDeadlineInStatement(t *testing.T) {
	for _, kind := range []string{"lock", "pg_sleep"} {
		t.Run(kind, func(t *testing.T) {
			f := newPGCancel(t, nil)
			ctx := context.Background()
			drivertest.AppendN(t, f.s, "acme", "s", 1)
			pid := f.writerPID()
			for attempt, d := 0, 100*time.Millisecond; ; attempt, d = attempt+1, 2*d {
				id := fmt.Sprintf("deadline-%d", attempt)
				var k int64
				if kind == "lock" {
					k = f.lock()
				}
				dctx, cancel := context.WithTimeout(ctx, d)
				done := make(chan struct{})
				var err error
				go func() {
					defer close(done)
					err = f.s.Update(dctx, func(tx *store.Tx) error {
						if _, err := tx.ExecContext(dctx, `INSERT INTO marks (k) VALUES ($1)`, id); err != nil {
							return err
						}
						if _, err := tx.Append(dctx, "acme", "s", store.Any, pgEvent(id)); err != nil {
							return err
						}
						var err error
						if kind == "lock" {
							_, err = tx.ExecContext(dctx, `SELECT pg_advisory_xact_lock($1)`, k)
						} else {
							_, err = tx.ExecContext(dctx, `SELECT pg_sleep(0.5)`)
						}
						return err
					})
				}()
				inStatement := true
				if kind == "lock" {
					inStatement = f.awaitWriterWaits(k, done)
					if inStatement {
						<-dctx.Done()
					}
					f.unlock(k)
				}
				<-done
				cancel()
				if err == nil || (!errors.Is(err, context.DeadlineExceeded) && !strings.Contains(err.Error(), "deadline")) {
					t.Errorf("Update: got %v, want an error matching context.DeadlineExceeded", err)
				}
				if _, err := f.s.EventByID(ctx, "acme", id); !errors.Is(err, store.ErrNotFound) {
					t.Errorf("the event of the Update past its deadline: got %v, want ErrNotFound", err)
				}
				if _, marks := f.stored(); marks[id] != 0 {
					t.Errorf("the Update past its deadline left its mark")
				}
				if inStatement {
					break
				}
				if attempt == 5 {
					t.Fatalf("the deadline passed before the statement began %d times", attempt+1)
				}
				t.Logf("the deadline of %v passed before the statement began (a loaded machine); again with %v", d, 2*d)
			}
			if got := f.writerPID(); got != pid {
				t.Errorf("the writer's session changed from pid %d to %d (0: none): the deadline dropped its connection", pid, got)
			}
			if _, err := f.s.Append(ctx, "acme", "s", store.Any, pgEvent("next")); err != nil {
				t.Fatalf("the append after the deadline: %v", err)
			}
			if st, _ := f.stored(); st.n != 2 {
				t.Errorf("stored %d events, want 2", st.n)
			}
			if got := f.writerPID(); got != pid {
				t.Errorf("the writer's session changed from pid %d to %d (0: none) after the next append", pid, got)
			}
		})
	}
}

// pgCall is one call of the randomized cancellation tests: an append or
// an Update (a mark, an append, a read or a statement that waits, then
// a second mark whose error it ignores), and where its caller's context
// is cancelled:
//
//	""        never
//	"before"  before the call
//	"race"    by another goroutine, after a seeded number of yields
//	"queued"  while it waits in the writer's queue (it withdraws)
//	"in-tx"   by a request before it in its group, once the writer took it
//	"in-stmt" while its statement waits for a lock the test holds
//	"after"   inside the Update closure, after its statements
type pgCall struct {
	update bool
	when   string
	id     string // the event's id, the Update's mark
	stream string
	lock   int64 // "in-stmt": the lock its statement waits for
	spins  int   // "race"
	group  int64 // an Update's: the recorded_at of its transaction, read inside it
	err    error

	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}
}

func (c *pgCall) String() string {
	kind := "append"
	if c.update {
		kind = "update"
	}
	return fmt.Sprintf("%s %s (cancel %q)", kind, c.id, c.when)
}

// mustFail: the call's context ended before it could have been stored.
// outcome names the call's kind, cancel point and result, for the
// rounds' tally of outcomes.
func (c *pgCall) outcome() string {
	k := fmt.Sprintf("%v/%s", c.update, c.when)
	if c.err != nil {
		return k + " error"
	}
	return k + " nil"
}

func (c *pgCall) mustFail() bool {
	switch c.when {
	case "before", "queued", "in-stmt", "after":
		return true
	}
	return false
}

func newPGCall(f *pgCancel, update bool, when, id, stream string) *pgCall {
	c := &pgCall{update: update, when: when, id: id, stream: stream, done: make(chan struct{})}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	if when == "in-stmt" {
		c.lock = f.lock()
	}
	return c
}

// run makes c's call on f's store, and closes c.done when it returns.
func (f *pgCancel) run(c *pgCall) {
	defer close(c.done)
	ctx := c.ctx
	if !c.update {
		_, c.err = f.s.Append(ctx, "acme", c.stream, store.Any, pgEvent(c.id))
		return
	}
	c.err = f.s.Update(ctx, func(tx *store.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO marks (k) VALUES ($1)`, c.id); err != nil {
			return err
		}
		if _, err := tx.Append(ctx, "acme", c.stream, store.Any, pgEvent(c.id)); err != nil {
			return err
		}
		// Its transaction's clock reading, which every event of the
		// transaction carries: which group this Update ran in.
		if err := tx.QueryRowContext(ctx, `SELECT recorded_at FROM events WHERE event_id = $1`, c.id).Scan(&c.group); err != nil {
			return err
		}
		if c.when == "in-stmt" {
			if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock($1)`, c.lock); err != nil {
				return err
			}
		}
		if c.when == "after" {
			c.cancel()
		}
		// Errors from here on are ignored: the closure reports success,
		// the writer must still see the cancelled caller.
		_, _ = tx.ExecContext(ctx, `INSERT INTO marks (k) VALUES ($1)`, c.id+"/end")
		return nil
	})
}

// watch cancels an "in-stmt" call once the writer waits in its
// statement, then lets the statement go.
func (f *pgCancel) watch(c *pgCall) {
	if f.awaitWriterWaits(c.lock, c.done) {
		c.cancel()
	}
	f.unlock(c.lock)
}

// race cancels a "race" call after its seeded number of yields.
func (c *pgCall) race() {
	for range c.spins {
		runtime.Gosched()
	}
	c.cancel()
}

// checkCalls checks every call against the log: a call that returned nil
// is stored once and whole, one that returned an error stored nothing
// and was cancelled (context.Canceled), one cancelled before it could
// be stored failed, and the positions have no gap (f.stored). It returns
// the log as read.
func (f *pgCancel) checkCalls(t *testing.T, round int, calls []*pgCall) pgStored {
	t.Helper()
	st, marks := f.stored()
	for _, c := range calls {
		what := fmt.Sprintf("round %d: %v", round, c)
		n, m, end := st.count[c.id], 0, 0
		if c.update {
			m, end = marks[c.id], marks[c.id+"/end"]
		}
		if c.err == nil {
			if n != 1 || (c.update && (m != 1 || end != 1)) {
				t.Errorf("%s returned nil, but stored its event %d times, its marks %d and %d times", what, n, m, end)
			}
		} else {
			if n != 0 || m != 0 || end != 0 {
				t.Errorf("%s returned %v, but stored its event %d times, its marks %d and %d times", what, c.err, n, m, end)
			}
			if c.when == "" {
				t.Errorf("%s was not cancelled, yet failed: %v", what, c.err)
			} else if !errors.Is(c.err, context.Canceled) {
				t.Errorf("%s: got %v, want an error matching context.Canceled", what, c.err)
			}
		}
		if c.mustFail() && c.err == nil {
			t.Errorf("%s was cancelled before it could be stored, yet returned nil", what)
		}
	}
	if err := f.s.CheckInvariants(context.Background()); err != nil {
		t.Errorf("round %d: %v", round, err)
	}
	return st
}

// pgSeed is the seed of a randomized test, from EVENTLITE_SEED or the
// clock, logged so that a failure can be drawn again.
func pgSeed(t *testing.T) uint64 {
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv("EVENTLITE_SEED"); v != "" {
		if _, err := fmt.Sscan(v, &seed); err != nil {
			t.Fatalf("EVENTLITE_SEED: %v", err)
		}
	}
	t.Logf("seed %d (EVENTLITE_SEED=%d to draw the same calls)", seed, seed)
	return seed
}

// TestPostgresCancelGroupAtRandom: concurrent appends and Updates, some
// cancelled at random points (before the call, from another goroutine at
// any time, while a statement of the Update waits, after its
// statements), sharing group commits as the scheduler forms them (a
// waiting statement holds the writer while the others queue). The seed
// decides the calls and their cancel points. Every call that returned
// nil is stored exactly once, every call that returned an error stored
// nothing, every call that was not cancelled succeeded, the positions
// have no gap, the invariants hold, and the writer keeps its session.
func TestPostgresCancelGroupAtRandom(t *testing.T) {
	seed := pgSeed(t)
	rng := mrand.New(mrand.NewPCG(seed, 11))
	f := newPGCancel(t, nil)
	pid := f.writerPID()
	rounds, callers := 20, 24
	if testing.Short() {
		rounds, callers = 5, 12
	}
	modes := map[bool][]string{
		false: {"", "", "before", "race"},
		true:  {"", "before", "race", "in-stmt", "after"},
	}
	outcomes := map[string]int{}
	shared := 0 // pairs of a cancelled Update and a successful call in its transaction
	for round := range rounds {
		calls := make([]*pgCall, callers)
		for i := range calls {
			update := rng.IntN(2) == 0
			when := modes[update][rng.IntN(len(modes[update]))]
			calls[i] = newPGCall(f, update, when, fmt.Sprintf("r%d-c%d", round, i), fmt.Sprintf("s%d", i%4))
			calls[i].spins = rng.IntN(200)
		}
		start := make(chan struct{})
		var wg sync.WaitGroup
		for _, c := range calls {
			if c.when == "before" {
				c.cancel()
			}
			wg.Go(func() {
				<-start
				if c.when == "race" {
					go c.race()
				}
				f.run(c)
			})
			if c.when == "in-stmt" {
				wg.Go(func() { <-start; f.watch(c) })
			}
		}
		close(start)
		wg.Wait()
		st := f.checkCalls(t, round, calls)
		for _, c := range calls {
			c.cancel()
			outcomes[c.outcome()]++
			if c.update && c.err != nil && c.group != 0 {
				for _, o := range calls {
					if o.err == nil && st.at[o.id] == c.group {
						shared++
					}
				}
			}
		}
		if got := f.writerPID(); got != pid {
			t.Fatalf("round %d: the writer's session changed from pid %d to %d (0: none): a cancellation dropped its connection (seed %d)", round, pid, got, seed)
		}
		if t.Failed() {
			t.Fatalf("round %d failed (seed %d)", round, seed)
		}
	}
	t.Logf("outcomes (update?/cancel point): %v; %d pairs of a cancelled Update and a successful call shared a transaction", outcomes, shared)
}

// TestPostgresCancelInGroupAtRandom: each round holds the writer, queues
// a seeded mix of appends and Updates, and cancels them at their seeded
// points - before the call, while queued, by a request before them in
// the group once the writer took them, while the Update's statement
// waits, inside the Update after its statements, or from another
// goroutine while the writer runs the group - then lets the writer run
// them all as one group commit. Beside the checks of every call
// (checkCalls), the round's stored events all carry one transaction's
// clock reading, as do the cancelled Updates: the cancelled requests
// shared the transaction and were undone alone, and none of their
// neighbours was rolled back because of them.
func TestPostgresCancelInGroupAtRandom(t *testing.T) {
	seed := pgSeed(t)
	rng := mrand.New(mrand.NewPCG(seed, 12))
	f := newPGCancel(t, nil)
	pid := f.writerPID()
	rounds, callers := 12, 24
	if testing.Short() {
		rounds, callers = 4, 12
	}
	appendModes := []string{"", "", "before", "queued", "in-tx", "race"}
	updateModes := []string{"", "in-stmt", "after", "race"}
	outcomes := map[string]int{}
	for round := range rounds {
		var calls, before, rest []*pgCall
		for i := range callers {
			update := rng.IntN(3) == 0
			when := appendModes[rng.IntN(len(appendModes))]
			if update {
				when = updateModes[rng.IntN(len(updateModes))]
			}
			c := newPGCall(f, update, when, fmt.Sprintf("r%d-c%d", round, i), fmt.Sprintf("s%d", i%4))
			c.spins = rng.IntN(200)
			calls = append(calls, c)
			if when == "before" {
				before = append(before, c)
			} else {
				rest = append(rest, c)
			}
		}
		release := f.gate()
		// Cancelled before the call: it returns at once, never run.
		for _, c := range before {
			c.cancel()
			f.run(c)
		}
		q0 := store.WriterQueued(f.s)
		// First in the group, a request that cancels the "in-tx" calls
		// queued after it, once the writer has taken them all.
		var group int64
		cancelled := make(chan error, 1)
		go func() {
			cancelled <- f.s.Update(context.Background(), func(tx *store.Tx) error {
				for _, c := range rest {
					if c.when == "in-tx" {
						c.cancel()
					}
				}
				// A statement of its own, so that the writer's clock
				// reading is visible: the group's.
				if _, err := tx.Append(context.Background(), "acme", "canceller", store.Any, pgEvent(fmt.Sprintf("r%d-canceller", round))); err != nil {
					return err
				}
				return tx.QueryRowContext(context.Background(), `SELECT recorded_at FROM events WHERE event_id = $1`, fmt.Sprintf("r%d-canceller", round)).Scan(&group)
			})
		}()
		pollUntil(t, "the canceller queued", func() bool { return store.WriterQueued(f.s) == q0+1 })
		var wg sync.WaitGroup
		for _, c := range rest {
			wg.Go(func() { f.run(c) })
			if c.when == "in-stmt" {
				wg.Go(func() { f.watch(c) })
			}
		}
		pollUntil(t, "every call queued", func() bool { return store.WriterQueued(f.s) == q0+1+len(rest) })
		for _, c := range rest {
			if c.when == "queued" {
				c.cancel()
				<-c.done // withdrawn: it returns while the writer is held
			}
		}
		for _, c := range rest {
			if c.when == "race" {
				go c.race()
			}
		}
		if err := release(); err != nil {
			t.Fatalf("round %d: the Update that held the writer: %v", round, err)
		}
		wg.Wait()
		if err := <-cancelled; err != nil {
			t.Fatalf("round %d: the canceller: %v", round, err)
		}
		st := f.checkCalls(t, round, calls)
		for _, c := range calls {
			c.cancel()
			outcomes[c.outcome()]++
			if c.err == nil && st.at[c.id] != group {
				t.Errorf("round %d: %v was stored by a transaction (clock %d) other than the group's (%d)", round, c, st.at[c.id], group)
			}
			if c.update && c.err != nil && c.group != 0 && c.group != group {
				t.Errorf("round %d: %v ran in a transaction (clock %d) other than the group's (%d)", round, c, c.group, group)
			}
		}
		if got := f.writerPID(); got != pid {
			t.Fatalf("round %d: the writer's session changed from pid %d to %d (0: none): a cancellation dropped its connection (seed %d)", round, pid, got, seed)
		}
		if t.Failed() {
			t.Fatalf("round %d failed (seed %d)", round, seed)
		}
	}
	t.Logf("outcomes (update?/cancel point): %v", outcomes)
}

// gate holds the store's writer goroutine in an Update whose statement
// waits for a lock the test holds, so that every later call waits in the
// writer's queue (store.WriterQueued counts them) and the writer takes
// them in one group once release frees it. release returns that
// Update's error.
//
// The Update must run on the writer goroutine, not inline on its
// caller's (which an idle store does): a first Update holds the writer
// inline while the second is submitted and so queued; once the first
// ends, the writer goroutine runs the second.
func (f *pgCancel) gate() (release func() error) {
	f.t.Helper()
	type held struct {
		done chan struct{}
		err  error
	}
	hold := func(k int64) *held {
		h := &held{done: make(chan struct{})}
		go func() {
			defer close(h.done)
			h.err = f.s.Update(context.Background(), func(tx *store.Tx) error {
				_, err := tx.ExecContext(context.Background(), `SELECT pg_advisory_xact_lock($1)`, k)
				return err
			})
		}()
		return h
	}
	k0, k1 := f.lock(), f.lock()
	first := hold(k0)
	if !f.awaitWriterWaits(k0, first.done) {
		f.t.Fatalf("the first holder returned without waiting: %v", first.err)
	}
	pending := store.WriterPending(f.s)
	second := hold(k1)
	pollUntil(f.t, "the second holder submitted", func() bool { return store.WriterPending(f.s) == pending+1 })
	f.unlock(k0)
	<-first.done
	if first.err != nil {
		f.t.Fatalf("the first holder: %v", first.err)
	}
	if !f.awaitWriterWaits(k1, second.done) {
		f.t.Fatalf("the second holder returned without waiting: %v", second.err)
	}
	return func() error {
		f.unlock(k1)
		<-second.done
		return second.err
	}
}
