package main

import (
	"bufio"
	"bytes"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/storetest"
)

// The Litestream recipe of docs/backup.md, run for real: the configuration
// is read from the document, Litestream runs as a child process beside
// concurrent writers, and its replica is restored and brought back with
// eventlite restore. Without a Litestream v0.5 binary the test skips and
// says how to install one, unless EVENTLITE_REQUIRE_LITESTREAM is set (CI
// sets it): then it fails.

// litestreamInstall is how to get the Litestream the recipe is tested with.
const litestreamInstall = "go install github.com/benbjohnson/litestream/cmd/litestream@v0.5.18"

// litestreamPath finds Litestream v0.5 ($EVENTLITE_LITESTREAM, else
// litestream on PATH), or skips (fails under EVENTLITE_REQUIRE_LITESTREAM).
func litestreamPath(t *testing.T) string {
	t.Helper()
	missing := func(msg string) {
		msg += ": " + litestreamInstall + ", then put it on PATH or set EVENTLITE_LITESTREAM to its path"
		if os.Getenv("EVENTLITE_REQUIRE_LITESTREAM") != "" {
			t.Fatal(msg + "; EVENTLITE_REQUIRE_LITESTREAM is set, so this fails rather than skips")
		}
		t.Skip(msg)
	}
	p := os.Getenv("EVENTLITE_LITESTREAM")
	if p == "" {
		var err error
		if p, err = exec.LookPath("litestream"); err != nil {
			missing("no litestream binary (EVENTLITE_LITESTREAM is unset and there is none on PATH)")
		}
	}
	out, err := exec.Command(p, "version").Output()
	v := strings.TrimSpace(string(out))
	if err != nil || !strings.HasPrefix(v, "v0.5.") {
		missing(fmt.Sprintf("%s is not Litestream v0.5 (version %q, %v), the version docs/backup.md's recipe is written for", p, v, err))
	}
	t.Logf("litestream %s (%s)", v, p)
	return p
}

// Placeholders of docs/backup.md's Litestream configuration, replaced by
// the test's paths.
const (
	recipeDB      = "/var/lib/orders/eventlite.db"
	recipeReplica = "/var/backups/orders/eventlite"
)

// recipeConfig returns the Litestream configuration of docs/backup.md (the
// indented block that starts with "dbs:") with its paths replaced.
func recipeConfig(t *testing.T, db, replica string) string {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "backup.md"))
	if err != nil {
		t.Fatal(err)
	}
	var block []string
	for line := range strings.SplitSeq(string(doc), "\n") {
		switch {
		case block == nil && line == "    dbs:":
			block = append(block, "dbs:")
		case block != nil && (line == "" || strings.HasPrefix(line, "    ")):
			block = append(block, strings.TrimPrefix(line, "    "))
		case block != nil:
			cfg := strings.Join(block, "\n")
			if !strings.Contains(cfg, recipeDB) || !strings.Contains(cfg, recipeReplica) {
				t.Fatalf("docs/backup.md's Litestream configuration does not name %s and %s:\n%s", recipeDB, recipeReplica, cfg)
			}
			return strings.NewReplacer(recipeDB, db, recipeReplica, replica).Replace(cfg)
		}
	}
	t.Fatal(`docs/backup.md has no Litestream configuration (an indented block starting with "dbs:")`)
	return ""
}

// litestreamLog keeps a child's output and closes checkpointed at its
// first log line of a checkpoint.
type litestreamLog struct {
	mu           sync.Mutex
	buf          bytes.Buffer
	checkpointed chan struct{}
}

func (l *litestreamLog) scan(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	seen := false
	for sc.Scan() {
		line := sc.Text()
		l.mu.Lock()
		l.buf.WriteString(line + "\n")
		l.mu.Unlock()
		if !seen && strings.Contains(line, "msg=checkpoint ") && strings.Contains(line, "mode=") {
			seen = true
			close(l.checkpointed)
		}
	}
}

func (l *litestreamLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// litestreamEvent is the data of every event the writers append: writer,
// batch, index in the batch and the batch's size.
type litestreamEvent struct {
	W, B, I, N int
}

// ackedEvent is an event whose append returned without error.
type ackedEvent struct {
	id       string
	position int64
}

// replicaFacts is what one litestream restore of the replica gave.
type replicaFacts struct {
	path   string
	events map[string]envelope.Event // by id
	head   int64
}

// TestLitestreamRecipe is not parallel: Litestream and four writers load
// the machine, and the package's parallel tests have timing bounds of
// their own (relay's --timeout runs).
func TestLitestreamRecipe(t *testing.T) {
	ls := litestreamPath(t)
	ctx := t.Context()
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	const writers = 4 // goroutines, on two store handles of the file
	minAcked := 1200
	if testing.Short() {
		minAcked = 400
	}

	dir, replicaDir := t.TempDir(), t.TempDir()
	live := filepath.Join(dir, "eventlite.db")
	cfgPath := filepath.Join(dir, "litestream.yml")
	if err := os.WriteFile(cfgPath, []byte(recipeConfig(t, live, replicaDir)), 0o644); err != nil {
		t.Fatal(err)
	}
	lsRun := func(args ...string) (string, error) {
		out, err := exec.CommandContext(ctx, ls, args...).CombinedOutput()
		return string(out), err
	}
	// restore runs the recipe's litestream restore into a new file and
	// reads what it holds.
	restored := 0
	restore := func() (replicaFacts, error) {
		restored++
		f := replicaFacts{path: filepath.Join(t.TempDir(), fmt.Sprintf("replica-%d.db", restored)), events: map[string]envelope.Event{}}
		if out, err := lsRun("restore", "-config", cfgPath, "-o", f.path, live); err != nil {
			return f, fmt.Errorf("litestream restore: %v\n%s", err, out)
		}
		s, err := store.Open(ctx, f.path, &store.Options{ReadOnly: true})
		if err != nil {
			t.Fatalf("open the restored replica: %v", err)
		}
		defer s.Close()
		for e, err := range s.ReadAll(ctx, store.ReadAllOptions{}) {
			if err != nil {
				t.Fatalf("read the restored replica: %v", err)
			}
			f.events[e.ID] = e
			f.head = max(f.head, e.Position)
		}
		return f, nil
	}
	// waitFor polls cond until it holds, failing the test if it does not
	// within a bound far above what the test needs.
	waitFor := func(what string, lg *litestreamLog, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(3 * time.Minute)
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("no %s within 3 minutes; litestream's log:\n%s", what, lg)
			}
			<-tick.C
		}
	}

	// The service: two handles on the file, as two processes would have.
	s1, err := store.Open(ctx, live, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s1.Close()
	s2, err := store.Open(ctx, live, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	first, err := s1.Append(ctx, "default", "before-litestream", store.Any, envelope.Event{Source: "/test", Type: "t.first", Data: []byte(`{}`)})
	if err != nil {
		t.Fatal(err)
	}

	// litestream replicate, with the document's configuration (and its
	// checkpoints logged).
	lg := &litestreamLog{checkpointed: make(chan struct{})}
	cmd := exec.Command(ls, "replicate", "-config", cfgPath, "-log-level", "debug")
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	scanned := make(chan struct{})
	go func() { lg.scan(pr); close(scanned) }()
	killed := false
	defer func() {
		if !killed {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			_ = pw.Close()
			<-scanned
		}
		if t.Failed() {
			t.Logf("litestream's log:\n%s", lg)
		}
	}()
	acked := []ackedEvent{{id: first.Events[0].ID, position: first.Events[0].Position}}

	// Concurrent writers, in batches of 1 to 3 events.
	var (
		mu      sync.Mutex
		wg      sync.WaitGroup
		stop    = make(chan struct{})
		errs    = make(chan error, writers)
		nAcked  int
		handles = []*store.Store{s1, s2}
	)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(seed), uint64(w)))
			s := handles[w%2]
			for b := 0; ; b++ {
				select {
				case <-stop:
					return
				default:
				}
				n := 1 + rng.IntN(3)
				evs := make([]envelope.Event, n)
				for i := range evs {
					data, _ := json.Marshal(litestreamEvent{W: w, B: b, I: i, N: n})
					evs[i] = envelope.Event{Source: "/test", Type: "t.replicated", Data: data}
				}
				res, err := s.Append(ctx, "default", fmt.Sprintf("w%d-%d", w, b/10), store.Any, evs...)
				if err != nil {
					errs <- fmt.Errorf("writer %d, batch %d: %w", w, b, err)
					return
				}
				mu.Lock()
				for _, e := range res.Events {
					acked = append(acked, ackedEvent{id: e.ID, position: e.Position})
				}
				nAcked += len(res.Events)
				mu.Unlock()
			}
		}()
	}
	writing := func() bool {
		select {
		case err := <-errs:
			t.Fatalf("an append beside Litestream failed: %v", err)
		default:
		}
		return true
	}

	// While they write: the replica restores to a store that holds whole
	// batches only and keeps its invariants, and Litestream checkpoints.
	var mid replicaFacts
	waitFor("restorable replica while the writers run", lg, func() bool {
		writing()
		f, err := restore()
		if err != nil || len(f.events) < 2 {
			return false
		}
		mid = f
		return true
	})
	checkWholeBatches(t, mid)
	checkInvariants(t, mid.path)
	waitFor(fmt.Sprintf("%d acknowledged appends and a checkpoint by Litestream", minAcked), lg, func() bool {
		writing()
		mu.Lock()
		n := nAcked
		mu.Unlock()
		select {
		case <-lg.checkpointed:
			return n >= minAcked
		default:
			return false
		}
	})
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("an append beside Litestream failed: %v", err)
	}
	var head int64
	for _, a := range acked {
		head = max(head, a.position)
	}
	if h, err := s1.Head(ctx); err != nil || h != head {
		t.Fatalf("live head %d (%v), want %d, the highest acknowledged position", h, err, head)
	}
	t.Logf("%d events acknowledged while Litestream ran, head %d; replica mid-run held %d events", len(acked), head, len(mid.events))

	// The replica catches up to the head.
	waitFor("replica caught up with the head", lg, func() bool {
		f, err := restore()
		return err == nil && f.head == head
	})

	// The machine is lost between syncs: Litestream dies, and appends
	// acknowledged afterwards never reach the replica (the lag).
	killed = true
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	_ = pw.Close()
	<-scanned
	var lostHead int64
	for i := range 5 {
		res, err := s2.Append(ctx, "default", "lag", store.Any, envelope.Event{Source: "/test", Type: "t.lag", Data: fmt.Appendf(nil, `{"i":%d}`, i)})
		if err != nil {
			t.Fatal(err)
		}
		lostHead = res.Events[0].Position
	}
	for _, s := range handles {
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}

	// The recipe's restore: litestream restore, eventlite doctor, eventlite
	// restore into the old file.
	final, err := restore()
	if err != nil {
		t.Fatal(err)
	}
	if len(final.events) != len(acked) {
		t.Errorf("the replica holds %d events, want the %d acknowledged while Litestream ran", len(final.events), len(acked))
	}
	for _, a := range acked {
		if e, ok := final.events[a.id]; !ok || e.Position != a.position {
			t.Fatalf("acknowledged event %s (position %d) is not in the replica at its position (found: %v)", a.id, a.position, ok)
		}
	}
	checkWholeBatches(t, final)
	if tables := litestreamTables(t, final.path); len(tables) == 0 {
		t.Errorf("the replica has no tables of Litestream's (_litestream_*): docs/backup.md says v0.5 creates them")
	} else {
		t.Logf("Litestream's tables in the replica: %v", tables)
	}
	mustRun(t, "", "doctor", "--db", final.path)
	mustRun(t, "", "backup", filepath.Join(t.TempDir(), "backup.db"), "--db", final.path)
	r := mustRun(t, "", "restore", final.path, "--db", live, "--force", "--json")
	var out map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatalf("restore --json output %q: %v", r.stdout, err)
	}
	if out["events"] != float64(len(acked)) || out["head_position"] != strconv.FormatInt(head, 10) {
		t.Errorf("eventlite restore of the replica: %v; want %d events, head %d", out, len(acked), head)
	}
	s := storetest.MustOpenPath(t, live, nil)
	got := map[string]int64{}
	var tookBack []string // the streams the restore took back
	for e, err := range s.ReadAll(ctx, store.ReadAllOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		if e.Type == store.TypeStreamRestored {
			tookBack = append(tookBack, e.Stream)
			continue
		}
		got[e.ID] = e.Position
	}
	// The old file had handed out the lag's versions: the restore records
	// them as a gap and announces it on that stream, so that no version
	// is handed out twice (docs/backup.md).
	if len(tookBack) != 1 || tookBack[0] != "lag" {
		t.Errorf("the restore announced version gaps on %v; want on the stream lag alone", tookBack)
	}
	for _, a := range acked {
		if p, ok := got[a.id]; !ok || p != a.position {
			t.Fatalf("after eventlite restore, acknowledged event %s (position %d) is at %d (present %v)", a.id, a.position, p, ok)
		}
	}
	if len(got) != len(acked) {
		t.Errorf("after eventlite restore the store holds %d events, want %d", len(got), len(acked))
	}
	res, err := s.Append(ctx, "default", "after-restore", store.Any, envelope.Event{Source: "/test", Type: "t.after", Data: []byte(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	if p := res.Events[0].Position; p <= lostHead {
		t.Errorf("the first append after the restore got position %d; want above %d, the highest the old file handed out", p, lostHead)
	}
}

// checkWholeBatches fails the test unless every batch in f is all there.
func checkWholeBatches(t *testing.T, f replicaFacts) {
	t.Helper()
	type batch struct{ w, b int }
	seen, size := map[batch]int{}, map[batch]int{}
	for _, e := range f.events {
		if e.Type != "t.replicated" {
			continue
		}
		var d litestreamEvent
		if err := json.Unmarshal(e.Data, &d); err != nil {
			t.Fatalf("event %s: %v", e.ID, err)
		}
		k := batch{d.W, d.B}
		seen[k]++
		size[k] = d.N
	}
	for k, n := range seen {
		if n != size[k] {
			t.Errorf("%s holds %d of the %d events of writer %d's batch %d: a partial transaction", filepath.Base(f.path), n, size[k], k.w, k.b)
		}
	}
}

// litestreamTables lists the tables of Litestream's in the database at
// path.
func litestreamTables(t *testing.T, path string) []string {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE '\_litestream\_%' ESCAPE '\' ORDER BY name`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var names []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		names = append(names, n)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return names
}
