package pgdriver

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestAppend: versions, positions, the optimistic check, duplicate ids,
// NULLs, and a rolled back transaction that gives its positions back.
func TestAppend(t *testing.T) {
	db := openTest(t, nil)
	ctx := context.Background()
	ext := `{"x":"1"}`
	e1 := ev("e1")
	e1.Extensions = &ext
	e2 := ev("e2")
	e2.Data = nil
	res, err := db.Append(ctx, "acme", "order-1", NoStream, []Event{e1, e2})
	if err != nil {
		t.Fatal(err)
	}
	if res != (AppendResult{First: 1, Last: 2, Version: 2}) {
		t.Errorf("first append: %+v", res)
	}
	for _, c := range []struct {
		expected Expected
		stream   string
		actual   int64
	}{{NoStream, "order-1", 2}, {1, "order-1", 2}, {3, "order-1", 2}, {StreamExists, "order-2", 0}, {1, "order-2", 0}} {
		_, err := db.Append(ctx, "acme", c.stream, c.expected, []Event{ev("x")})
		var ce *ConflictError
		if !errors.Is(err, ErrConflict) || !errors.As(err, &ce) || ce.Actual != c.actual || ce.Expected != c.expected {
			t.Errorf("expected %d on %s: %v, want a conflict at %d", c.expected, c.stream, err, c.actual)
		}
	}
	if _, err := db.Append(ctx, "acme", "order-2", Any, []Event{ev("e1")}); !errors.Is(err, ErrDuplicate) {
		t.Errorf("a stored event id again: %v, want ErrDuplicate", err)
	}
	// The same id under another tenant is another event.
	if res, err := db.Append(ctx, "other", "order-1", NoStream, []Event{ev("e1")}); err != nil || res.First != 3 {
		t.Errorf("another tenant: %+v, %v; want position 3", res, err)
	}
	// A rolled back transaction gives its positions back.
	w, err := db.BeginWrite(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := w.Append(ctx, "acme", "order-1", 2, []Event{ev("gone")}); err != nil || res.First != 4 {
		t.Fatalf("in the transaction: %+v, %v", res, err)
	}
	w.Rollback()
	if res, err := db.Append(ctx, "acme", "order-1", 2, []Event{ev("e3")}); err != nil || res != (AppendResult{First: 4, Last: 4, Version: 3}) {
		t.Errorf("after a rollback: %+v, %v; want position 4, version 3", res, err)
	}
	// Several appends in one transaction.
	w, err = db.BeginWrite(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Append(ctx, "acme", "order-3", NoStream, []Event{ev("a1"), ev("a2")}); err != nil {
		t.Fatal(err)
	}
	if res, err := w.Append(ctx, "acme", "order-3", 2, []Event{ev("a3")}); err != nil || res != (AppendResult{First: 7, Last: 7, Version: 3}) {
		t.Errorf("second append in a transaction: %+v, %v", res, err)
	}
	if err := w.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := w.Commit(ctx); !errors.Is(err, ErrTxDone) {
		t.Errorf("commit twice: %v", err)
	}
	recs, err := db.ReadAfter(ctx, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range recs {
		got = append(got, fmt.Sprintf("%d %s/%s v%d %s", r.Position, r.Tenant, r.Stream, r.Version, r.ID))
	}
	want := []string{"1 acme/order-1 v1 e1", "2 acme/order-1 v2 e2", "3 other/order-1 v1 e1", "4 acme/order-1 v3 e3",
		"5 acme/order-3 v1 a1", "6 acme/order-3 v2 a2", "7 acme/order-3 v3 a3"}
	if !slices.Equal(got, want) {
		t.Errorf("log:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if recs[0].Extensions == nil || *recs[0].Extensions != ext || recs[1].Data != nil || recs[1].Extensions != nil || string(recs[0].Data) != `{"id":"e1"}` {
		t.Errorf("columns did not round-trip: %+v / %+v", recs[0], recs[1])
	}
	if h, err := db.Head(ctx); err != nil || h != 7 {
		t.Errorf("head %d, %v; want 7", h, err)
	}
	if recs, err := db.ReadAfter(ctx, 5, 1); err != nil || len(recs) != 1 || recs[0].Position != 6 {
		t.Errorf("ReadAfter(5, 1): %+v, %v", recs, err)
	}
	var ie *InputError
	if _, err := db.ReadAfter(ctx, 0, 0); !errors.As(err, &ie) || ie.Field != "limit" {
		t.Errorf("limit 0: %v, want an *InputError on limit", err)
	}
	if _, err := db.Append(ctx, "acme", "order-9", -3, []Event{ev("bad")}); !errors.As(err, &ie) || ie.Field != "expected" {
		t.Errorf("expected -3: %v, want an *InputError on expected", err)
	}
	if h, err := db.Head(ctx); err != nil || h != 7 {
		t.Errorf("head %d, %v after refused input; want 7", h, err)
	}
}

// A follower's view of the log: positions and event ids.
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

// interleaver is what the fixed interleaving runs against: the driver, or
// the negative control (a sequence, no head lock).
type interleaver interface {
	// beginAppend starts a write transaction, appends one event and holds
	// the transaction open.
	beginAppend(ctx context.Context, id string) (heldTx, error)
	// append appends one event in a transaction of its own.
	append(ctx context.Context, id string) error
	readAfter(ctx context.Context, pos int64, limit int) ([]seenEvent, error)
}

type heldTx interface {
	commit(ctx context.Context) error
	rollback()
	pid() uint32
}

// The driver.
type headInterleaver struct{ db *DB }

func (h headInterleaver) beginAppend(ctx context.Context, id string) (heldTx, error) {
	w, err := h.db.BeginWrite(ctx)
	if err != nil {
		return nil, err
	}
	if _, err := w.Append(ctx, "t", "s-"+id, NoStream, []Event{ev(id)}); err != nil {
		w.Rollback()
		return nil, err
	}
	return writeHeld{w}, nil
}

func (h headInterleaver) append(ctx context.Context, id string) error {
	_, err := h.db.Append(ctx, "t", "s-"+id, NoStream, []Event{ev(id)})
	return err
}

func (h headInterleaver) readAfter(ctx context.Context, pos int64, limit int) ([]seenEvent, error) {
	recs, err := h.db.ReadAfter(ctx, pos, limit)
	var s []seenEvent
	for _, r := range recs {
		s = append(s, seenEvent{r.Position, r.ID})
	}
	return s, err
}

type writeHeld struct{ w *WriteTx }

func (w writeHeld) commit(ctx context.Context) error { return w.w.Commit(ctx) }
func (w writeHeld) rollback()                        { w.w.Rollback() }
func (w writeHeld) pid() uint32                      { return w.w.pid() }

// The negative control: what most PostgreSQL event stores did, an
// identity column (a sequence) that hands out the position at insert.
type seqInterleaver struct{ db *DB }

const seqTable = `CREATE TABLE events_seq (
    position BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    event_id TEXT COLLATE "C" NOT NULL UNIQUE
)`

func newSeqInterleaver(t *testing.T, db *DB) seqInterleaver {
	t.Helper()
	if _, err := db.Pool().Exec(context.Background(), "SET search_path TO "+db.quoted+"; "+seqTable); err != nil {
		t.Fatal(err)
	}
	return seqInterleaver{db}
}

type seqHeld struct {
	tx pgx.Tx
}

func (s seqInterleaver) beginAppend(ctx context.Context, id string) (heldTx, error) {
	tx, err := s.db.Pool().BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.ReadCommitted})
	if err != nil {
		return nil, err
	}
	if _, err := tx.Exec(ctx, "INSERT INTO "+s.db.quoted+".events_seq (event_id) VALUES ($1)", id); err != nil {
		tx.Rollback(ctx) //nolint:errcheck
		return nil, err
	}
	return seqHeld{tx}, nil
}

func (s seqInterleaver) append(ctx context.Context, id string) error {
	h, err := s.beginAppend(ctx, id)
	if err != nil {
		return err
	}
	return h.commit(ctx)
}

func (s seqInterleaver) readAfter(ctx context.Context, pos int64, limit int) ([]seenEvent, error) {
	rows, err := s.db.Pool().Query(ctx, "SELECT position, event_id FROM "+s.db.quoted+".events_seq WHERE position > $1 ORDER BY position LIMIT $2", pos, limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowToStructByPos[seenEvent])
}

func (s seqHeld) commit(ctx context.Context) error { return s.tx.Commit(ctx) }
func (s seqHeld) rollback()                        { s.tx.Rollback(context.Background()) } //nolint:errcheck
func (s seqHeld) pid() uint32                      { return s.tx.Conn().PgConn().PID() }

// interleaving is what runInterleaving observed.
type interleaving struct {
	blocked     bool   // T2 was seen waiting for T1's lock
	waitQuery   string // what T2 was running while it waited
	firstRead   []seenEvent
	final, seen []seenEvent
	problems    []string // checkFollower's findings
}

// runInterleaving runs the fixed interleaving: T1 appends and holds its
// transaction open; T2 starts an append; once T2 is either seen blocked
// behind T1 (pg_blocking_pids) or has committed, a follower reads; T1
// commits; T2 ends; the follower reads on from its last position.
func runInterleaving(t *testing.T, db *DB, a interleaver) interleaving {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var r interleaving
	t1, err := a.beginAppend(ctx, "t1")
	if err != nil {
		t.Fatal(err)
	}
	defer t1.rollback()
	t2done := make(chan error, 1)
	go func() { t2done <- a.append(ctx, "t2") }()
	// Wait for T2 to block behind T1, or to finish: both are observed,
	// neither is assumed after a sleep.
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	var t2err error
	t2finished := false
wait:
	for {
		select {
		case t2err = <-t2done:
			t2finished = true
			break wait
		case <-tick.C:
			var q string
			err := db.Pool().QueryRow(ctx, "SELECT query FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))", int64(t1.pid())).Scan(&q)
			if err == nil {
				r.blocked, r.waitQuery = true, q
				break wait
			}
			if !errors.Is(err, pgx.ErrNoRows) {
				t.Fatal(err)
			}
		case <-ctx.Done():
			t.Fatal("T2 neither blocked nor finished")
		}
	}
	if t2finished && t2err != nil {
		t.Fatalf("T2: %v", t2err)
	}
	r.firstRead, err = a.readAfter(ctx, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	r.seen = append(r.seen, r.firstRead...)
	if err := t1.commit(ctx); err != nil {
		t.Fatal(err)
	}
	if !t2finished {
		if err := <-t2done; err != nil {
			t.Fatalf("T2: %v", err)
		}
	}
	var cursor int64
	if n := len(r.seen); n > 0 {
		cursor = r.seen[n-1].Position
	}
	more, err := a.readAfter(ctx, cursor, 100)
	if err != nil {
		t.Fatal(err)
	}
	r.seen = append(r.seen, more...)
	r.final, err = a.readAfter(ctx, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	r.problems = checkFollower(r.final, r.seen)
	return r
}

// TestSkippedEventFixedInterleaving: with the head lock, T2 waits for T1
// (seen in pg_stat_activity), the follower's first read finds nothing
// committed, and reading on it gets T1's event, then T2's: none skipped.
func TestSkippedEventFixedInterleaving(t *testing.T) {
	db := openTest(t, nil)
	r := runInterleaving(t, db, headInterleaver{db})
	if !r.blocked {
		t.Error("T2 was not seen waiting for T1's head lock")
	} else if !strings.Contains(r.waitQuery, "log_head") {
		t.Errorf("T2 waited in %q, not on the head row", r.waitQuery)
	}
	if len(r.firstRead) != 0 {
		t.Errorf("the follower read %v before T1 committed", r.firstRead)
	}
	if want := []seenEvent{{1, "t1"}, {2, "t2"}}; !slices.Equal(r.seen, want) {
		t.Errorf("the follower read %v, want %v", r.seen, want)
	}
	if r.problems != nil {
		t.Errorf("the checker found: %v", r.problems)
	}
}

// TestSkippedEventNegativeControl runs the same interleaving against an
// identity column without the head lock: T2 takes position 2 after T1
// took 1, commits first, the follower reads 2 and moves past 1, and T1's
// commit then fills 1 behind it. The checker must report that skip: this
// proves it can see the bug the head lock prevents.
func TestSkippedEventNegativeControl(t *testing.T) {
	db := openTest(t, nil)
	r := runInterleaving(t, db, newSeqInterleaver(t, db))
	if r.blocked {
		t.Fatal("T2 blocked behind T1 in the control: it cannot show the bug")
	}
	if want := []seenEvent{{1, "t1"}, {2, "t2"}}; !slices.Equal(r.final, want) {
		t.Fatalf("control log %v, want %v", r.final, want)
	}
	if want := []string{"skipped position 1 (event t1)"}; !slices.Equal(r.problems, want) {
		t.Errorf("the checker reported %v on the control, want %v", r.problems, want)
	}
}

// TestCheckFollower: the checker reports skips, repeats and disorder.
func TestCheckFollower(t *testing.T) {
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

// TestPositionsRandomized: several processes append concurrently, each
// holding its write transactions open for random short spans and rolling
// some back, while followers in this process poll ReadAfter. Every
// follower reads every committed event exactly once, in position order,
// each batch starting right after its last position (no hole), and the
// log ends holding positions 1..N, N the number of events the processes
// committed. The seed is printed; EVENTLITE_PG_SEED replays it.
func TestPositionsRandomized(t *testing.T) {
	schema := freshSchema(t)
	db := openSchema(t, schema, nil)
	ctx := context.Background()
	if err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("EVENTLITE_PG_SEED"); s != "" {
		var err error
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("seed %d (EVENTLITE_PG_SEED=%d replays it)", seed, seed)
	procs, perProc := 4, 60
	if testing.Short() {
		procs, perProc = 3, 20
	}
	var producing atomic.Int32
	producing.Store(int32(procs))
	committed := make(chan []string, procs)
	var wg sync.WaitGroup
	for p := range procs {
		wg.Go(func() {
			defer producing.Add(-1)
			cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$")
			cmd.Env = append(os.Environ(), helperEnv+"=append", "EVENTLITE_PGDRIVER_ADDR="+withSchema(t, schema),
				fmt.Sprintf("EVENTLITE_PGDRIVER_SEED=%d", seed+uint64(p)), fmt.Sprintf("EVENTLITE_PGDRIVER_PROC=%d", p),
				fmt.Sprintf("EVENTLITE_PGDRIVER_N=%d", perProc))
			var out, errb bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errb
			if err := cmd.Run(); err != nil {
				t.Errorf("process %d: %v\n%s%s", p, err, out.String(), errb.String())
			}
			var ids []string
			sc := bufio.NewScanner(&out)
			for sc.Scan() {
				if id, ok := strings.CutPrefix(sc.Text(), "COMMITTED "); ok {
					ids = append(ids, id)
				}
			}
			committed <- ids
		})
	}
	const followers = 3
	seen := make([][]seenEvent, followers)
	var holes [followers][]string
	var fwg sync.WaitGroup
	for f := range followers {
		fwg.Go(func() {
			var cursor int64
			limit := 1 + f*4 // pages of 1, 5 and 9
			for {
				done := producing.Load() == 0
				recs, err := db.ReadAfter(ctx, cursor, limit)
				if err != nil {
					t.Error(err)
					return
				}
				for _, r := range recs {
					if r.Position != cursor+1 {
						holes[f] = append(holes[f], fmt.Sprintf("read %d right after %d", r.Position, cursor))
					}
					seen[f] = append(seen[f], seenEvent{r.Position, r.ID})
					cursor = r.Position
				}
				if len(recs) == 0 {
					if done {
						return // nothing more can commit
					}
					time.Sleep(time.Millisecond) // poll interval
				}
			}
		})
	}
	wg.Wait()
	fwg.Wait()
	close(committed)
	var ids []string
	for c := range committed {
		ids = append(ids, c...)
	}
	final, err := (headInterleaver{db}).readAfter(ctx, 0, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) == 0 || len(final) != len(ids) {
		t.Fatalf("log holds %d events, the processes committed %d", len(final), len(ids))
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
	t.Logf("%d processes committed %d events; %d followers read them all", procs, len(final), followers)
}

// helperAppend is the appending process of TestPositionsRandomized: N write
// transactions of 1-3 events each on a few streams of its own, each held
// open 0-3ms, one in ten rolled back; it prints the id of every event it
// committed.
func helperAppend(t *testing.T, addr string) {
	ctx := context.Background()
	seed, _ := strconv.ParseUint(os.Getenv("EVENTLITE_PGDRIVER_SEED"), 10, 64)
	proc := os.Getenv("EVENTLITE_PGDRIVER_PROC")
	n, _ := strconv.Atoi(os.Getenv("EVENTLITE_PGDRIVER_N"))
	rng := rand.New(rand.NewPCG(seed, 1))
	db, err := Open(ctx, addr, &Options{PoolSize: 2, BusyTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for i := range n {
		w, err := db.BeginWrite(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var evs []Event
		for j := range 1 + rng.IntN(3) {
			evs = append(evs, ev(fmt.Sprintf("p%s-%d-%d", proc, i, j)))
		}
		if _, err := w.Append(ctx, "t", fmt.Sprintf("p%s-s%d", proc, rng.IntN(3)), Any, evs); err != nil {
			w.Rollback() // else db.Close waits for the connection forever
			t.Fatal(err)
		}
		time.Sleep(time.Duration(rng.IntN(3000)) * time.Microsecond) // the transaction held open
		if rng.IntN(10) == 0 {
			w.Rollback()
			continue
		}
		if err := w.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		for _, e := range evs {
			fmt.Printf("COMMITTED %s\n", e.ID)
		}
	}
}
