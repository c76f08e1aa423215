package store_test

import (
	"bufio"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/storetest"
)

// The PostgreSQL driver's own proofs, through the public API: positions
// are never skipped by a follower (this file), sessions, busy errors,
// migrations among processes and passwords (postgres_session_test.go).
// Each test skips when EVENTLITE_TEST_POSTGRES is empty.

// pgSQL opens a plain database/sql pool on base, beside any store: what
// a test checks or does behind the store's back. It is closed when tb
// ends.
func pgSQL(tb testing.TB, base string) *sql.DB {
	tb.Helper()
	db, err := sql.Open("pgx", base)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = db.Close() })
	return db
}

// schemaOf returns the schema an address names (eventlite_schema),
// quoted for SQL.
func schemaOf(tb testing.TB, addr string) string {
	tb.Helper()
	u, err := url.Parse(addr)
	if err != nil {
		tb.Fatal(err)
	}
	s := u.Query().Get("eventlite_schema")
	if s == "" {
		tb.Fatalf("%s names no schema", addr)
	}
	return `"` + s + `"`
}

// withParam returns addr with the URL parameter k set to v.
func withParam(tb testing.TB, addr, k, v string) string {
	tb.Helper()
	u, err := url.Parse(addr)
	if err != nil {
		tb.Fatal(err)
	}
	q := u.Query()
	q.Set(k, v)
	u.RawQuery = q.Encode()
	return u.String()
}

// pgEvent is a small event with a JSON body naming its id.
func pgEvent(id string) envelope.Event {
	return envelope.Event{ID: id, Source: "/test", Type: "test.happened", Data: []byte(`{"id":"` + id + `"}`)}
}

// seenEvent is an event as a follower read it.
type seenEvent struct {
	Position int64
	ID       string
}

// checkFollower compares what a follower read, in the order it read it,
// with the log as it stands at the end: every event exactly once, in
// position order. It returns the problems found (none: nil).
func checkFollower(final, seen []seenEvent) []string {
	var problems []string
	count := map[int64]int{}
	for i, s := range seen {
		count[s.Position]++
		if i > 0 && s.Position <= seen[i-1].Position {
			problems = append(problems, fmt.Sprintf("position %d read after %d: out of order", s.Position, seen[i-1].Position))
		}
	}
	for _, f := range final {
		switch count[f.Position] {
		case 0:
			problems = append(problems, fmt.Sprintf("skipped position %d (event %s)", f.Position, f.ID))
		case 1:
		default:
			problems = append(problems, fmt.Sprintf("position %d read %d times", f.Position, count[f.Position]))
		}
	}
	return problems
}

// TestPostgresCheckFollower: the checker reports skips, repeats and
// disorder, and nothing on a clean read.
func TestPostgresCheckFollower(t *testing.T) {
	final := []seenEvent{{1, "a"}, {2, "b"}, {3, "c"}}
	for _, c := range []struct {
		seen []seenEvent
		want int
	}{
		{final, 0},
		{[]seenEvent{{1, "a"}, {3, "c"}}, 1},
		{[]seenEvent{{1, "a"}, {2, "b"}, {2, "b"}, {3, "c"}}, 2},
		{[]seenEvent{{2, "b"}, {1, "a"}, {3, "c"}}, 1},
	} {
		if got := checkFollower(final, c.seen); len(got) != c.want {
			t.Errorf("%v: %v, want %d problems", c.seen, got, c.want)
		}
	}
}

// interleaver is what the fixed interleaving runs against: the store
// (two writers, as two processes, and a follower), or the negative
// control (an identity column, no head row).
type interleaver interface {
	// hold starts a write transaction, appends the event id in it and
	// keeps it open.
	hold(ctx context.Context, id string) (heldTx, error)
	// append appends the event id in a transaction of its own, from
	// another writer than hold's.
	append(ctx context.Context, id string) error
	// readFrom reads the log from position from, inclusive.
	readFrom(ctx context.Context, from int64) ([]seenEvent, error)
}

// heldTx is a transaction hold keeps open.
type heldTx interface {
	pid() int // its server process, as pg_stat_activity names it
	commit() error
	abort() // rolls back, unless it ended already
}

// storeInterleaver: T1 is an Update closure of one store that appends and
// then waits; T2 an Append of a second store on the same schema (another
// process's writer); the follower a third store.
type storeInterleaver struct {
	a, b, follower *store.Store
}

var errAbort = errors.New("the test rolls this transaction back")

type storeHeld struct {
	backend int
	release chan error
	done    chan error
	once    sync.Once
	err     error
}

func (h *storeHeld) pid() int { return h.backend }

func (h *storeHeld) end(cause error) error {
	h.once.Do(func() {
		h.release <- cause
		h.err = <-h.done
	})
	return h.err
}

func (h *storeHeld) commit() error { return h.end(nil) }
func (h *storeHeld) abort()        { _ = h.end(errAbort) }

func (si storeInterleaver) hold(ctx context.Context, id string) (heldTx, error) {
	h := &storeHeld{release: make(chan error), done: make(chan error, 1)}
	started := make(chan int, 1)
	go func() {
		h.done <- si.a.Update(ctx, func(tx *store.Tx) error {
			if _, err := tx.Append(ctx, "t", "s-"+id, store.NoStream, pgEvent(id)); err != nil {
				return err
			}
			var pid int
			if err := tx.QueryRowContext(ctx, `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
				return err
			}
			started <- pid
			return <-h.release
		})
	}()
	select {
	case h.backend = <-started:
		return h, nil
	case err := <-h.done:
		return nil, fmt.Errorf("the held transaction ended before it appended: %v", err)
	}
}

func (si storeInterleaver) append(ctx context.Context, id string) error {
	_, err := si.b.Append(ctx, "t", "s-"+id, store.NoStream, pgEvent(id))
	return err
}

func (si storeInterleaver) readFrom(ctx context.Context, from int64) ([]seenEvent, error) {
	return pgReadLog(ctx, si.follower, from, 0)
}

// pgReadLog reads s's log from position from (at most limit events; 0: no
// limit).
func pgReadLog(ctx context.Context, s *store.Store, from int64, limit int) ([]seenEvent, error) {
	var out []seenEvent
	for e, err := range s.ReadAll(ctx, store.ReadAllOptions{From: from, Limit: limit}) {
		if err != nil {
			return out, err
		}
		out = append(out, seenEvent{e.Position, e.ID})
	}
	return out, nil
}

// seqInterleaver is the negative control: what most PostgreSQL event
// stores did, an identity column (a sequence) that hands out the
// position at insert, on a scratch table of the test's schema.
type seqInterleaver struct {
	db    *sql.DB
	table string // schema-qualified
}

func newSeqInterleaver(t *testing.T, db *sql.DB, schema string) seqInterleaver {
	t.Helper()
	table := schema + ".events_seq"
	if _, err := db.Exec(`CREATE TABLE ` + table + ` (
    position BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    event_id TEXT COLLATE "C" NOT NULL UNIQUE
)`); err != nil {
		t.Fatal(err)
	}
	return seqInterleaver{db: db, table: table}
}

type seqHeld struct {
	tx      *sql.Tx
	backend int
}

func (h *seqHeld) pid() int      { return h.backend }
func (h *seqHeld) commit() error { return h.tx.Commit() }
func (h *seqHeld) abort()        { _ = h.tx.Rollback() }

func (si seqInterleaver) hold(ctx context.Context, id string) (heldTx, error) {
	tx, err := si.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	h := &seqHeld{tx: tx}
	if _, err := tx.ExecContext(ctx, `INSERT INTO `+si.table+` (event_id) VALUES ($1)`, id); err != nil {
		h.abort()
		return nil, err
	}
	if err := tx.QueryRowContext(ctx, `SELECT pg_backend_pid()`).Scan(&h.backend); err != nil {
		h.abort()
		return nil, err
	}
	return h, nil
}

func (si seqInterleaver) append(ctx context.Context, id string) error {
	_, err := si.db.ExecContext(ctx, `INSERT INTO `+si.table+` (event_id) VALUES ($1)`, id)
	return err
}

func (si seqInterleaver) readFrom(ctx context.Context, from int64) ([]seenEvent, error) {
	rows, err := si.db.QueryContext(ctx, `SELECT position, event_id FROM `+si.table+` WHERE position >= $1 ORDER BY position`, from)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []seenEvent
	for rows.Next() {
		var s seenEvent
		if err := rows.Scan(&s.Position, &s.ID); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

// interleaving is what runInterleaving observed.
type interleaving struct {
	t1         int64  // T1's position, as the final log holds it
	blocked    bool   // T2 was seen waiting for a lock T1 holds
	waitQuery  string // what T2 was running while it waited
	firstRead  []seenEvent
	final      []seenEvent
	seen       []seenEvent
	problems   []string // checkFollower's findings
	t2Finished bool     // T2 had committed before T1 did
}

// runInterleaving runs the fixed interleaving: a first event is
// appended and read by the follower; T1 appends and holds its
// transaction open; T2 starts an append; once T2 is either seen waiting
// for a lock T1 holds (pg_stat_activity, wait_event_type Lock) or has
// committed, the follower reads on from its last position; T1 commits;
// T2 ends; the follower reads on again.
func runInterleaving(t *testing.T, db *sql.DB, a interleaver) interleaving {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var r interleaving
	if err := a.append(ctx, "first"); err != nil {
		t.Fatal(err)
	}
	var err error
	if r.seen, err = a.readFrom(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if len(r.seen) != 1 {
		t.Fatalf("the follower read %v, want the first event", r.seen)
	}
	cursor := r.seen[0].Position
	t1, err := a.hold(ctx, "t1")
	if err != nil {
		t.Fatal(err)
	}
	defer t1.abort()
	t2done := make(chan error, 1)
	go func() { t2done <- a.append(ctx, "t2") }()
	// Wait until T2 waits for T1, or has finished: both are observed,
	// neither is assumed after a sleep.
	var t2err error
	r.waitQuery, r.blocked, r.t2Finished, t2err = awaitWaiter(t, ctx, db, t1.pid(), t2done)
	if t2err != nil {
		t.Fatalf("T2: %v", t2err)
	}
	if r.firstRead, err = a.readFrom(ctx, cursor+1); err != nil {
		t.Fatal(err)
	}
	r.seen = append(r.seen, r.firstRead...)
	if err := t1.commit(); err != nil {
		t.Fatalf("T1's commit: %v", err)
	}
	if !r.t2Finished {
		if err := <-t2done; err != nil {
			t.Fatalf("T2: %v", err)
		}
	}
	cursor = r.seen[len(r.seen)-1].Position
	more, err := a.readFrom(ctx, cursor+1)
	if err != nil {
		t.Fatal(err)
	}
	r.seen = append(r.seen, more...)
	if r.final, err = a.readFrom(ctx, 1); err != nil {
		t.Fatal(err)
	}
	for _, f := range r.final {
		if f.ID == "t1" {
			r.t1 = f.Position
		}
	}
	r.problems = checkFollower(r.final, r.seen)
	return r
}

// awaitWaiter waits until a server process waits for a lock (pg_stat_activity,
// wait_event_type Lock) that the process holder holds, and returns the
// statement it waits in; or until done says the work that could wait
// has finished (finished, with its error).
func awaitWaiter(t *testing.T, ctx context.Context, db *sql.DB, holder int, done <-chan error) (query string, blocked, finished bool, err error) {
	t.Helper()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			return "", false, true, err
		case <-tick.C:
			err := db.QueryRowContext(ctx, `SELECT query FROM pg_stat_activity
				WHERE wait_event_type = 'Lock' AND $1 = ANY(pg_blocking_pids(pid))`, holder).Scan(&query)
			if err == nil {
				return query, true, false, nil
			}
			if !errors.Is(err, sql.ErrNoRows) {
				t.Fatal(err)
			}
		case <-ctx.Done():
			t.Fatalf("nothing waited for server process %d, and the work that could have did not finish", holder)
		}
	}
}

// TestPostgresSkippedEventFixedInterleaving: T1 (an Update of one store)
// takes its position and holds its transaction open; T2 (an Append of a
// second store on the schema, another process's writer) must wait for
// it on the head row, seen in pg_stat_activity; the follower, reading on
// meanwhile, sees nothing past T1's position; after T1 and then T2
// commit, it reads T1's event, then T2's: in order, none skipped, each
// once.
func TestPostgresSkippedEventFixedInterleaving(t *testing.T) {
	base := storetest.PostgresBase(t)
	addr := storetest.PostgresSchema(t, base)
	si := storeInterleaver{
		a:        openAddr(t, addr, nil),
		b:        openAddr(t, addr, &store.Options{BusyTimeout: time.Minute}),
		follower: openAddr(t, addr, nil),
	}
	r := runInterleaving(t, pgSQL(t, base), si)
	if !r.blocked {
		t.Fatal("T2 was not seen waiting for T1: it committed while T1 held its position")
	}
	if !strings.Contains(r.waitQuery, "log_head") {
		t.Errorf("T2 waited in %q, not on the head row", r.waitQuery)
	}
	if len(r.firstRead) != 0 {
		t.Errorf("while T1 held position %d the follower read %v", r.t1, r.firstRead)
	}
	if want := []seenEvent{{1, "first"}, {2, "t1"}, {3, "t2"}}; !slices.Equal(r.seen, want) {
		t.Errorf("the follower read %v, want %v", r.seen, want)
	}
	if r.problems != nil {
		t.Errorf("the checker found: %v", r.problems)
	}
}

// TestPostgresSkippedEventNegativeControl runs the same interleaving
// against an identity column without the head row: T2 takes position 3
// after T1 took 2, commits first, the follower reads 3 and moves past 2,
// and T1's commit then fills 2 behind it. The checker must report that
// skip: it proves the check can fail, and so that the store's passing
// it means something.
func TestPostgresSkippedEventNegativeControl(t *testing.T) {
	base := storetest.PostgresBase(t)
	addr := storetest.PostgresSchema(t, base)
	openAddr(t, addr, nil) // creates the test's schema
	db := pgSQL(t, base)
	r := runInterleaving(t, db, newSeqInterleaver(t, db, schemaOf(t, addr)))
	if r.blocked || !r.t2Finished {
		t.Fatal("T2 waited for T1 in the control: it cannot show the skip")
	}
	if want := []seenEvent{{1, "first"}, {2, "t1"}, {3, "t2"}}; !slices.Equal(r.final, want) {
		t.Fatalf("control log %v, want %v", r.final, want)
	}
	if want := []string{"skipped position 2 (event t1)"}; !slices.Equal(r.problems, want) {
		t.Errorf("the checker reported %v on the control, want %v", r.problems, want)
	}
}

// The helper processes of the PostgreSQL tests: this test binary
// re-executed with -test.run=^TestPostgresHelperProcess$ and
// EVENTLITE_PG_HELPER naming what the child does, on the store at
// EVENTLITE_PG_ADDR. A child says READY, waits for a line on stdin (the
// go-ahead: children start their work together), then works; it fails
// with a message on stderr and exit status 3.
//
//	append: EVENTLITE_PG_N write transactions (EVENTLITE_PG_PROC names
//	        the child, EVENTLITE_PG_SEED seeds it); prints COMMITTED <id>
//	        for every event it committed
//	open:   opens the store (migrating a fresh schema) and closes it
//	hold:   appends the event "held" in an Update and, inside the
//	        closure, prints HOLDING <backend pid> and waits on stdin
const (
	envPGHelper = "EVENTLITE_PG_HELPER"
	envPGAddr   = "EVENTLITE_PG_ADDR"
	envPGProc   = "EVENTLITE_PG_PROC"
	envPGSeed   = "EVENTLITE_PG_SEED"
	envPGN      = "EVENTLITE_PG_N"
	// envPGTestSeed replays TestPostgresPositionsRandomized with a seed
	// it logged.
	envPGTestSeed = "EVENTLITE_PG_TEST_SEED"
)

// TestPostgresHelperProcess is not a test: it is the body of the child
// processes above. Without EVENTLITE_PG_HELPER it returns at once.
func TestPostgresHelperProcess(t *testing.T) {
	mode := os.Getenv(envPGHelper)
	if mode == "" {
		return
	}
	fail := func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, "pg helper %s %s: %s\n", mode, os.Getenv(envPGProc), fmt.Sprintf(format, args...))
		os.Exit(3)
	}
	var outMu sync.Mutex
	say := func(line string) {
		outMu.Lock()
		defer outMu.Unlock()
		if _, err := os.Stdout.Write([]byte(line + "\n")); err != nil {
			fail("write: %v", err)
		}
	}
	stdin := bufio.NewReader(os.Stdin)
	say("READY")
	if _, err := stdin.ReadString('\n'); err != nil {
		fail("wait for the go-ahead: %v", err)
	}
	ctx := context.Background()
	s, err := store.Open(ctx, os.Getenv(envPGAddr), &store.Options{BusyTimeout: 2 * time.Minute})
	if err != nil {
		fail("open: %v", err)
	}
	switch mode {
	case "open":
	case "append":
		helperPGAppend(ctx, s, say, fail)
	case "hold":
		err := s.Update(ctx, func(tx *store.Tx) error {
			if _, err := tx.Append(ctx, "t", "held", store.NoStream, pgEvent("held")); err != nil {
				return err
			}
			var pid int
			if err := tx.QueryRowContext(ctx, `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
				return err
			}
			say("HOLDING " + strconv.Itoa(pid))
			_, err := io.Copy(io.Discard, stdin)
			return err
		})
		fail("the held transaction ended: %v", err)
	default:
		fail("unknown mode")
	}
	if err := s.Close(); err != nil {
		fail("close: %v", err)
	}
	os.Exit(0)
}

// helperPGAppend is the appending child of TestPostgresPositionsRandomized:
// two workers, N write transactions in all. Worker 0 runs Update closures
// of 1-3 events on streams of its own, each held open 0-3ms after it
// appended, one in ten rolled back; worker 1 runs plain Appends, which
// group commit may join to worker 0's transactions.
func helperPGAppend(ctx context.Context, s *store.Store, say func(string), fail func(string, ...any)) {
	proc := os.Getenv(envPGProc)
	seed, err := strconv.ParseUint(os.Getenv(envPGSeed), 10, 64)
	if err != nil {
		fail("%s: %v", envPGSeed, err)
	}
	n, err := strconv.Atoi(os.Getenv(envPGN))
	if err != nil {
		fail("%s: %v", envPGN, err)
	}
	var wg sync.WaitGroup
	for w := range 2 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(seed, uint64(w)))
			for i := w; i < n; i += 2 {
				var evs []envelope.Event
				for j := range 1 + rng.IntN(3) {
					evs = append(evs, pgEvent(fmt.Sprintf("p%s-%d-%d", proc, i, j)))
				}
				stream := fmt.Sprintf("p%s-w%d-s%d", proc, w, rng.IntN(3))
				if w == 1 {
					if _, err := s.Append(ctx, "t", stream, store.Any, evs...); err != nil {
						fail("append: %v", err)
					}
				} else {
					hold := time.Duration(rng.IntN(3000)) * time.Microsecond
					rollback := rng.IntN(10) == 0
					err := s.Update(ctx, func(tx *store.Tx) error {
						if _, err := tx.Append(ctx, "t", stream, store.Any, evs...); err != nil {
							return err
						}
						time.Sleep(hold) // the transaction held open, its positions taken
						if rollback {
							return errAbort
						}
						return nil
					})
					if rollback && errors.Is(err, errAbort) {
						continue
					}
					if err != nil {
						fail("update: %v", err)
					}
				}
				for _, e := range evs {
					say("COMMITTED " + e.ID)
				}
			}
		})
	}
	wg.Wait()
}

// pgChild is a helper process the parent started.
type pgChild struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *bufio.Scanner
	errb  strings.Builder
}

// startPGChild starts a helper process in mode on addr and waits for its
// READY; it is killed when tb ends unless it exited.
func startPGChild(tb testing.TB, mode, addr string, env ...string) *pgChild {
	tb.Helper()
	exe, err := os.Executable()
	if err != nil {
		tb.Fatal(err)
	}
	c := &pgChild{cmd: exec.Command(exe, "-test.run=^TestPostgresHelperProcess$", "-test.count=1")}
	c.cmd.Env = append(os.Environ(), append([]string{envPGHelper + "=" + mode, envPGAddr + "=" + addr}, env...)...)
	c.cmd.Stderr = &c.errb
	if c.stdin, err = c.cmd.StdinPipe(); err != nil {
		tb.Fatal(err)
	}
	stdout, err := c.cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := c.cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if c.cmd.ProcessState == nil {
			_ = c.cmd.Process.Kill()
			_ = c.cmd.Wait()
		}
	})
	c.out = bufio.NewScanner(stdout)
	if line, ok := c.next(); !ok || line != "READY" {
		tb.Fatalf("helper %s: %q instead of READY: %s", mode, line, c.errb.String())
	}
	return c
}

// next returns the child's next line; false at the end of its output.
func (c *pgChild) next() (string, bool) {
	if !c.out.Scan() {
		return "", false
	}
	return c.out.Text(), true
}

// goAhead lets the child start its work.
func (c *pgChild) goAhead() error {
	_, err := io.WriteString(c.stdin, "GO\n")
	return err
}

// TestPostgresPositionsRandomized: several processes append at once,
// holding their write transactions open for random short spans and
// rolling some back, while followers in this process poll ReadAll. Every
// follower reads every committed event exactly once, in position order,
// each event right after the one before (no hole), and the log ends
// holding positions 1..N, N the events the processes committed. The seed
// is logged; EVENTLITE_PG_TEST_SEED replays it.
func TestPostgresPositionsRandomized(t *testing.T) {
	base := storetest.PostgresBase(t)
	addr := storetest.PostgresSchema(t, base)
	s := openAddr(t, addr, &store.Options{PollInterval: 5 * time.Millisecond})
	ctx := context.Background()
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv(envPGTestSeed); v != "" {
		var err error
		if seed, err = strconv.ParseUint(v, 10, 64); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("seed %d (%s=%d replays it)", seed, envPGTestSeed, seed)
	procs, perProc := 4, 60
	if testing.Short() {
		procs, perProc = 3, 16
	}
	children := make([]*pgChild, procs)
	for p := range procs {
		children[p] = startPGChild(t, "append", addr, fmt.Sprintf("%s=%d", envPGProc, p),
			fmt.Sprintf("%s=%d", envPGSeed, seed+uint64(p)), fmt.Sprintf("%s=%d", envPGN, perProc))
	}
	producersDone := make(chan struct{})
	committed := make([][]string, procs)
	var wg sync.WaitGroup
	for p, c := range children {
		wg.Go(func() {
			for line, ok := c.next(); ok; line, ok = c.next() {
				if id, ok := strings.CutPrefix(line, "COMMITTED "); ok {
					committed[p] = append(committed[p], id)
				}
			}
			if err := c.cmd.Wait(); err != nil {
				t.Errorf("process %d: %v: %s", p, err, c.errb.String())
			}
		})
	}
	const followers = 3
	seen := make([][]seenEvent, followers)
	holes := make([][]string, followers)
	var fwg sync.WaitGroup
	for f := range followers {
		fwg.Go(func() {
			var cursor int64
			limit := f * 4 // no limit, 4 and 8 a read
			for {
				changed := s.Changed()
				finished := false
				select {
				case <-producersDone:
					finished = true
				default:
				}
				page, err := pgReadLog(ctx, s, cursor+1, limit)
				if err != nil {
					t.Error(err)
					return
				}
				for _, e := range page {
					if e.Position != cursor+1 {
						holes[f] = append(holes[f], fmt.Sprintf("read %d right after %d", e.Position, cursor))
					}
					seen[f] = append(seen[f], e)
					cursor = e.Position
				}
				if len(page) > 0 {
					continue
				}
				if finished {
					return // nothing more can commit
				}
				select {
				case <-changed:
				case <-producersDone:
				case <-time.After(20 * time.Millisecond): // a poll, in case a change went unseen
				}
			}
		})
	}
	for _, c := range children {
		if err := c.goAhead(); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
	close(producersDone)
	fwg.Wait()
	var ids []string
	for _, c := range committed {
		ids = append(ids, c...)
	}
	final, err := pgReadLog(ctx, s, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) == 0 || len(final) != len(ids) {
		t.Fatalf("the log holds %d events, the processes committed %d", len(final), len(ids))
	}
	var finalIDs []string
	for i, f := range final {
		if f.Position != int64(i+1) {
			t.Fatalf("position %d at index %d: the log is not 1..%d", f.Position, i, len(final))
		}
		finalIDs = append(finalIDs, f.ID)
	}
	slices.Sort(ids)
	slices.Sort(finalIDs)
	if !slices.Equal(ids, finalIDs) {
		t.Fatal("the log's events are not the ones the processes committed")
	}
	for f := range followers {
		if p := checkFollower(final, seen[f]); p != nil || holes[f] != nil {
			t.Errorf("follower %d: %v %v", f, p, holes[f])
		}
	}
	t.Logf("%d processes committed %d events; %d followers read each once, in order", procs, len(final), followers)
}
