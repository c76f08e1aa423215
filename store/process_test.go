package store_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/outbox"
	"github.com/eventlite/eventlite/store/storetest"
)

// Several tests here and in crash_test.go re-exec this test binary as child
// processes: os.Executable() with -test.run=^TestHelperProcess$ and
// EVENTLITE_HELPER naming what the child does. A child talks to its parent
// on stdout, one message per line, each line written with one unbuffered
// write (os.Stdout directly):
//
//	READY                the child is up (append and open children then wait for stdin)
//	TRY {procMsg}        the child is about to call Append (crash children)
//	ACK {procMsg}        Append returned nil: the append is acknowledged
//	DONE {procStats}     the child finished and closed its store
//
// Only a complete line counts: a child killed in the middle of a line
// acknowledged nothing with it. A child that fails says why on stderr and
// exits with status 3.
const (
	envHelper    = "EVENTLITE_HELPER"     // append | open | crash
	envDB        = "EVENTLITE_DB"         // the database file
	envChild     = "EVENTLITE_CHILD"      // the child's number, unique within a test
	envAppends   = "EVENTLITE_APPENDS"    // append: how many appends the child makes
	envChildSeed = "EVENTLITE_CHILD_SEED" // the child's random seed
	envCrashMode = "EVENTLITE_CRASH_MODE" // crash: serial | group | big
	envBigBatch  = "EVENTLITE_BIG_BATCH"  // crash, big mode: events per append
	envRetry     = "EVENTLITE_RETRY"      // crash: a JSON file of appends to retry first
	// envTestSeed reruns a randomized test with the seed it logged.
	envTestSeed = "EVENTLITE_TEST_SEED"
)

// procMsg is one append as a child reports it.
type procMsg struct {
	Child    int            `json:"c"`
	Worker   int            `json:"w"`
	Tenant   string         `json:"t"`
	Stream   string         `json:"s"`
	Expected int64          `json:"x"`           // the exact version asked for; -1 for store.Any
	Version  int64          `json:"v,omitempty"` // ACK: the stream's version after the append
	Retry    bool           `json:"r,omitempty"` // a retry of an append a killed child left in flight
	Events   []procMsgEvent `json:"e"`
}

// procMsgEvent is one event of a procMsg: TRY lines carry what a retry
// needs (type and data), ACK lines what the store assigned.
type procMsgEvent struct {
	ID       string          `json:"id"`
	Type     string          `json:"ty,omitempty"`
	Data     json.RawMessage `json:"d,omitempty"`
	Position int64           `json:"p,omitempty"`
	Version  int64           `json:"v,omitempty"`
}

func (m *procMsg) key() string { return m.Tenant + "/" + m.Events[0].ID }

func (m *procMsg) expected() store.Expected {
	if m.Expected < 0 {
		return store.Any
	}
	return store.Exact(m.Expected)
}

// envelopes builds the events of a TRY message, for a retry.
func (m *procMsg) envelopes() []envelope.Event {
	evs := make([]envelope.Event, len(m.Events))
	for i, e := range m.Events {
		evs[i] = envelope.Event{ID: e.ID, Source: "/eventlite/process-test", Type: e.Type, Data: e.Data}
	}
	return evs
}

// procStats is a child's DONE report.
type procStats struct {
	Appends   int   `json:"appends"`
	Busy      int64 `json:"busy"`      // ErrBusy results that were retried
	Conflicts int64 `json:"conflicts"` // expected conflicts on the contended stream
}

// ---- the child side ----

// TestHelperProcess is not a test: it is the body of the child processes
// that other tests start. Without EVENTLITE_HELPER it returns at once.
func TestHelperProcess(t *testing.T) {
	switch os.Getenv(envHelper) {
	case "":
		return
	case "append":
		helperAppend()
	case "crash":
		helperCrash()
	case "open":
		helperOpen()
	default:
		helperFail("unknown %s %q", envHelper, os.Getenv(envHelper))
	}
}

var helperOut sync.Mutex

// helperEmit writes one message line to stdout with one write.
func helperEmit(kind string, v any) {
	b := []byte(kind)
	if v != nil {
		j, err := json.Marshal(v)
		if err != nil {
			helperFail("encode %s: %v", kind, err)
		}
		b = append(append(b, ' '), j...)
	}
	b = append(b, '\n')
	helperOut.Lock()
	defer helperOut.Unlock()
	if _, err := os.Stdout.Write(b); err != nil {
		helperFail("write %s: %v", kind, err)
	}
}

func helperFail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "helper %s %s: %s\n", os.Getenv(envHelper), os.Getenv(envChild), fmt.Sprintf(format, args...))
	os.Exit(3)
}

func helperInt(name string) int64 {
	n, err := strconv.ParseInt(os.Getenv(name), 10, 64)
	if err != nil {
		helperFail("%s: %v", name, err)
	}
	return n
}

// helperRand returns worker w's random source, derived from the child's seed.
func helperRand(w int) *rand.Rand {
	seed, err := strconv.ParseUint(os.Getenv(envChildSeed), 10, 64)
	if err != nil {
		helperFail("%s: %v", envChildSeed, err)
	}
	return rand.New(rand.NewPCG(seed, uint64(w)))
}

// helperAppend is the multi-process child: it waits for the go-ahead on
// stdin, opens the (possibly not yet existing) file and makes
// EVENTLITE_APPENDS appends from two goroutines: to its own streams with
// exact expected versions, to shared streams with Any, and to one
// contended stream with exact versions that other processes race for.
func helperAppend() {
	ctx := context.Background()
	child := int(helperInt(envChild))
	n := int(helperInt(envAppends))
	helperEmit("READY", nil)
	if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
		helperFail("wait for the go-ahead: %v", err)
	}
	s, err := store.Open(ctx, os.Getenv(envDB), nil)
	if err != nil {
		helperFail("open: %v", err)
	}
	const workers = 2
	var busy, conflicts atomic.Int64
	// appendBusy retries ErrBusy (retryable) with the same events: should
	// the first try have committed after all, the retry returns its result.
	appendBusy := func(tenant, stream string, exp store.Expected, evs []envelope.Event) (store.AppendResult, error) {
		for range 100 {
			res, err := s.Append(ctx, tenant, stream, exp, evs...)
			if err == nil || !store.Retryable(err) {
				return res, err
			}
			busy.Add(1)
		}
		return store.AppendResult{}, fmt.Errorf("still busy after 100 tries")
	}
	var wg sync.WaitGroup
	for w := range workers {
		count := n / workers
		if w < n%workers {
			count++
		}
		wg.Go(func() {
			r := helperRand(w)
			own := fmt.Sprintf("proc-%d-%d", child, w)
			var ownVersion int64
			for i := range count {
				m := procMsg{Child: child, Worker: w, Tenant: "default", Expected: -1}
				size := 1
				kind := r.IntN(10)
				switch {
				case kind < 4:
					m.Stream, m.Expected, size = own, ownVersion, 1+r.IntN(3)
				case kind < 8:
					m.Stream, size = fmt.Sprintf("shared-%d", r.IntN(3)), 1+r.IntN(2)
					if r.IntN(2) == 0 {
						m.Tenant = "acme"
					}
				default:
					m.Stream = "contended"
				}
				evs := make([]envelope.Event, size)
				for j := range evs {
					evs[j] = envelope.Event{
						ID:     fmt.Sprintf("p%d-w%d-%d-%d", child, w, i, j),
						Source: "/eventlite/process-test",
						Type:   "proc.appended",
						Data:   fmt.Appendf(nil, `{"child":%d,"i":%d,"j":%d}`, child, i, j),
					}
				}
				var res store.AppendResult
				var err error
				if m.Stream == "contended" {
					// Read the version, append exactly on it, and on a
					// conflict (another process won) read again.
					for try := 0; ; try++ {
						if try == 1000 {
							helperFail("contended stream: 1000 conflicts in a row")
						}
						if m.Expected, err = s.StreamVersion(ctx, m.Tenant, m.Stream); err != nil {
							helperFail("stream version: %v", err)
						}
						res, err = appendBusy(m.Tenant, m.Stream, store.Exact(m.Expected), evs)
						if !errors.Is(err, store.ErrConflict) {
							break
						}
						conflicts.Add(1)
					}
				} else {
					res, err = appendBusy(m.Tenant, m.Stream, m.expected(), evs)
				}
				if err != nil {
					helperFail("append %d to %s: %v", i, m.Stream, err)
				}
				if m.Stream == own {
					ownVersion = res.Version
				}
				// Visible to every reader once Append returns: the read
				// pool sees at least this head.
				if h, err := s.Head(ctx); err != nil || h < res.LastPosition() {
					helperFail("head %d (err %v) after an append acknowledged at position %d", h, err, res.LastPosition())
				}
				m.Version = res.Version
				for _, e := range res.Events {
					m.Events = append(m.Events, procMsgEvent{ID: e.ID, Position: e.Position, Version: e.StreamVersion})
				}
				helperEmit("ACK", m)
			}
		})
	}
	wg.Wait()
	if err := s.Close(); err != nil {
		helperFail("close: %v", err)
	}
	helperEmit("DONE", procStats{Appends: n, Busy: busy.Load(), Conflicts: conflicts.Load()})
}

// helperOpen is the concurrent-open child: for every path it reads on
// stdin it opens that (new) file, appends one event, closes it and
// reports the append; it ends at EOF.
func helperOpen() {
	ctx := context.Background()
	child := int(helperInt(envChild))
	in := bufio.NewReader(os.Stdin)
	helperEmit("READY", nil)
	for round := 0; ; round++ {
		path, err := in.ReadString('\n')
		if err == io.EOF {
			return
		}
		if err != nil {
			helperFail("read stdin: %v", err)
		}
		s, err := store.Open(ctx, strings.TrimSuffix(path, "\n"), nil)
		if err != nil {
			helperFail("open: %v", err)
		}
		m := procMsg{Child: child, Tenant: "default", Stream: "opened", Expected: -1}
		res, err := s.Append(ctx, m.Tenant, m.Stream, store.Any, envelope.Event{
			ID: fmt.Sprintf("o%d-%d", child, round), Source: "/eventlite/process-test", Type: "proc.opened"})
		if err != nil {
			helperFail("append: %v", err)
		}
		if err := s.Close(); err != nil {
			helperFail("close: %v", err)
		}
		helperEmit("ACK", crashAck(&m, res))
	}
}

// ---- the parent side ----

// procChild is a running child process.
type procChild struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan string // complete stdout lines; closed at EOF
	stderr bytes.Buffer
	// partial counts a last line cut off without its newline (killed mid-write).
	partial atomic.Int64
	waited  bool
}

// startProcChild starts this test binary as a child running helper with
// the given extra environment. The child is killed at the end of the test
// if it still runs.
func startProcChild(t *testing.T, helper string, env ...string) *procChild {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// -test.timeout: a child orphaned by a dying parent still ends.
	cmd := exec.Command(exe, "-test.run=^TestHelperProcess$", "-test.count=1", "-test.timeout=5m")
	// atexit_sleep_ms=0: a race-enabled child need not idle for a second
	// before it exits (a race it found still fails its exit status).
	cmd.Env = append(append(os.Environ(), envHelper+"="+helper,
		"GORACE="+strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0")), env...)
	c := &procChild{cmd: cmd, lines: make(chan string, 64)}
	cmd.Stderr = &c.stderr
	if c.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(c.lines)
		br := bufio.NewReaderSize(out, 64<<10)
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				if line != "" {
					c.partial.Add(1)
				}
				return
			}
			c.lines <- strings.TrimSuffix(line, "\n")
		}
	}()
	t.Cleanup(func() {
		if !c.waited {
			c.stop()
		}
	})
	return c
}

// wait waits for the child to exit; the caller has read c.lines to the end.
func (c *procChild) wait() error {
	c.waited = true
	return c.cmd.Wait()
}

// stop kills the child, discards what it still says and waits for it
// (on the way to failing a test); it returns the child's stderr.
func (c *procChild) stop() string {
	_ = c.cmd.Process.Kill()
	for range c.lines {
	}
	_ = c.wait()
	return c.stderr.String()
}

// procNextLine returns the child's next line, false at EOF. A child that
// says nothing for long is killed and the test fails: a hung child is a
// bug, and no test here waits on a timer otherwise.
func procNextLine(t *testing.T, c *procChild) (string, bool) {
	t.Helper()
	select {
	case l, ok := <-c.lines:
		return l, ok
	case <-time.After(2 * time.Minute):
		t.Fatalf("child silent for 2 minutes, killed; stderr:\n%s", c.stop())
		return "", false
	}
}

// procParse splits a line into its kind and message.
func procParse(t *testing.T, line string) (string, *procMsg) {
	t.Helper()
	kind, body, _ := strings.Cut(line, " ")
	switch kind {
	case "TRY", "ACK":
		var m procMsg
		if err := json.Unmarshal([]byte(body), &m); err != nil || len(m.Events) == 0 {
			t.Fatalf("bad %s line %q: %v", kind, line, err)
		}
		return kind, &m
	}
	return kind, nil
}

// testSeed returns the seed for a randomized test: EVENTLITE_TEST_SEED when
// set, else the clock. It is logged so that a failure can be replayed.
func testSeed(t *testing.T) uint64 {
	t.Helper()
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv(envTestSeed); s != "" {
		var err error
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatalf("%s: %v", envTestSeed, err)
		}
	}
	t.Logf("seed %d (rerun with %s=%d)", seed, envTestSeed, seed)
	return seed
}

// procAcked is an acknowledged event as its child reported it.
type procAcked struct {
	tenant, stream    string
	position, version int64
}

// procLedger is what the children reported: every acknowledged event, and
// the appends tried but not acknowledged (in flight when a child died).
type procLedger struct {
	acked   map[string]procAcked // tenant/event id -> as acknowledged
	tried   map[string]*procMsg  // procMsg.key -> TRY without ACK so far
	appends int                  // acknowledged appends
	retries int                  // acknowledged retries of in-flight appends
}

func newProcLedger() *procLedger {
	return &procLedger{acked: map[string]procAcked{}, tried: map[string]*procMsg{}}
}

func (l *procLedger) try(m *procMsg) { l.tried[m.key()] = m }

// ack records an acknowledged append after checking its shape: consecutive
// positions and versions ending at the reported stream version, starting
// right after the expected version when one was given.
func (l *procLedger) ack(t *testing.T, m *procMsg) {
	t.Helper()
	delete(l.tried, m.key())
	l.appends++
	if m.Retry {
		l.retries++
	}
	for i, e := range m.Events {
		if i > 0 && (e.Position != m.Events[i-1].Position+1 || e.Version != m.Events[i-1].Version+1) {
			t.Errorf("acknowledged batch %s/%s is not consecutive: %+v", m.Tenant, m.Stream, m.Events)
			break
		}
	}
	if last := m.Events[len(m.Events)-1].Version; last != m.Version {
		t.Errorf("append to %s/%s acknowledged version %d but its last event has version %d", m.Tenant, m.Stream, m.Version, last)
	}
	if m.Expected >= 0 && m.Events[0].Version != m.Expected+1 {
		t.Errorf("append to %s/%s expected version %d but its first event got version %d", m.Tenant, m.Stream, m.Expected, m.Events[0].Version)
	}
	for _, e := range m.Events {
		a := procAcked{tenant: m.Tenant, stream: m.Stream, position: e.Position, version: e.Version}
		k := m.Tenant + "/" + e.ID
		if prev, ok := l.acked[k]; ok && prev != a {
			t.Errorf("event %s acknowledged twice, differently: %+v and %+v", k, prev, a)
		}
		l.acked[k] = a
	}
}

// procLogFacts is what procVerifyLog found.
type procLogFacts struct {
	head int64
	// committed holds the keys of the appends tried and not acknowledged
	// that are in the log (whole: partial ones fail the check).
	committed map[string]bool
}

// roundCommitted counts the appends that child round left in flight and
// that committed all the same.
func (f procLogFacts) roundCommitted(l *procLedger, round int) int {
	n := 0
	for k, m := range l.tried {
		if m.Child == round && f.committed[k] {
			n++
		}
	}
	return n
}

// procVerifyLog opens the store at path (recovering it after a crash) and
// checks it against the ledger: the store's own invariants (versions,
// outbox, holes, integrity_check), positions exactly 1..head in order,
// every acknowledged event at its acknowledged position and version, every
// append in flight either whole in the log or absent, and no event that
// nobody tried to append.
func procVerifyLog(t *testing.T, path string, l *procLedger) procLogFacts {
	t.Helper()
	ctx := context.Background()
	s, err := store.Open(ctx, path, nil)
	if err != nil {
		t.Fatalf("reopen %s: %v", path, err)
	}
	defer func() {
		if err := s.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	}()
	var problems []string
	report := func(format string, args ...any) {
		problems = append(problems, fmt.Sprintf(format, args...))
	}
	if err := s.CheckInvariants(ctx); err != nil {
		report("CheckInvariants: %v", err)
	}
	facts := procLogFacts{committed: map[string]bool{}}
	if facts.head, err = s.Head(ctx); err != nil {
		t.Fatal(err)
	}
	byID := make(map[string]envelope.Event)
	versions := make(map[string]int64)
	next := int64(1)
	for e, err := range s.ReadAll(ctx, store.ReadAllOptions{}) {
		if err != nil {
			t.Fatalf("read the log: %v", err)
		}
		if e.Position != next {
			report("position %d follows %d", e.Position, next-1)
		}
		next = e.Position + 1
		sk := e.Tenant + "/" + e.Stream
		if e.StreamVersion != versions[sk]+1 {
			report("%s: version %d at position %d follows version %d", sk, e.StreamVersion, e.Position, versions[sk])
		}
		versions[sk] = e.StreamVersion
		byID[e.Tenant+"/"+e.ID] = e
	}
	if next-1 != facts.head {
		report("the log ends at position %d but Head says %d", next-1, facts.head)
	}
	for k, a := range l.acked {
		e, ok := byID[k]
		switch {
		case !ok:
			report("acknowledged event %s (%s/%s v%d at %d) is lost", k, a.tenant, a.stream, a.version, a.position)
		case e.Position != a.position || e.StreamVersion != a.version || e.Stream != a.stream:
			report("acknowledged event %s: acknowledged as %s v%d at %d, stored as %s v%d at %d",
				k, a.stream, a.version, a.position, e.Stream, e.StreamVersion, e.Position)
		}
	}
	explained := maps.Clone(l.acked)
	for _, m := range l.tried {
		present := 0
		for i, me := range m.Events {
			k := m.Tenant + "/" + me.ID
			explained[k] = procAcked{}
			e, ok := byID[k]
			if !ok {
				continue
			}
			present++
			if e.Stream != m.Stream {
				report("in-flight event %s stored in stream %s, tried in %s", k, e.Stream, m.Stream)
			}
			if i > 0 {
				if p, ok := byID[m.Tenant+"/"+m.Events[i-1].ID]; ok && (e.Position != p.Position+1 || e.StreamVersion != p.StreamVersion+1) {
					report("in-flight batch %s stored out of sequence at event %d", m.key(), i)
				}
			}
			if i == 0 && m.Expected >= 0 && e.StreamVersion != m.Expected+1 {
				report("in-flight append %s expected version %d but was stored at version %d", m.key(), m.Expected, e.StreamVersion)
			}
		}
		switch present {
		case 0:
		case len(m.Events):
			facts.committed[m.key()] = true
		default:
			report("in-flight append %s (%d events) is stored in part: %d events (a batch is all or nothing)", m.key(), len(m.Events), present)
		}
	}
	for k, e := range byID {
		if _, ok := explained[k]; !ok {
			report("event %s at position %d was never appended by a child", k, e.Position)
		}
	}
	// An append writes no outbox row, and no relay ran: every event is
	// pending, none settled, counted on the writer's connection.
	var nEvents, nOutbox, settled int64
	if err := s.Update(ctx, func(tx *store.Tx) error {
		return tx.QueryRowContext(ctx, `SELECT (SELECT COUNT(*) FROM events), (SELECT COUNT(*) FROM outbox),
			(SELECT settled FROM outbox_watermark)`).Scan(&nEvents, &nOutbox, &settled)
	}); err != nil {
		t.Fatalf("count outbox rows: %v", err)
	}
	ost, err := outbox.For(s).Stats(ctx)
	if err != nil {
		t.Fatalf("outbox stats: %v", err)
	}
	if nEvents != int64(len(byID)) || nOutbox != 0 || settled != 0 || ost.Pending != nEvents {
		report("%d events read, %d counted, %d outbox rows, watermark %d, %d pending", len(byID), nEvents, nOutbox, settled, ost.Pending)
	}
	if len(problems) > 0 {
		more := ""
		if len(problems) > 20 {
			more = fmt.Sprintf("\n... and %d more", len(problems)-20)
			problems = problems[:20]
		}
		t.Fatalf("%s: %d problem(s):\n%s%s", path, len(problems), strings.Join(problems, "\n"), more)
	}
	return facts
}

// TestMultiProcessAppend runs several processes that create one file at
// the same moment (WAL switch and migrations racing) and append to it
// concurrently, then checks that every acknowledged append is in the log
// where its process was told it is, and that the log has nothing else.
func TestMultiProcessAppend(t *testing.T) {
	const children = 4
	n := 300
	if testing.Short() {
		n = 40
	}
	seed := testSeed(t)
	start := time.Now()
	path := filepath.Join(t.TempDir(), "multi.db")
	cs := make([]*procChild, children)
	for i := range cs {
		cs[i] = startProcChild(t, "append", envDB+"="+path, envChild+"="+strconv.Itoa(i),
			envAppends+"="+strconv.Itoa(n), envChildSeed+"="+strconv.FormatUint(seed+uint64(i), 10))
	}
	// Every child is up and waiting; only then do they all open the file.
	for i, c := range cs {
		if l, ok := procNextLine(t, c); !ok || l != "READY" {
			t.Fatalf("child %d: first line %q, want READY; stderr:\n%s", i, l, c.stop())
		}
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("%s exists before the children open it: %v", path, err)
	}
	for _, c := range cs {
		if _, err := io.WriteString(c.stdin, "go\n"); err != nil {
			t.Fatal(err)
		}
	}
	// A hung child is a bug: kill them all if they take far too long, and
	// the exit statuses below say so.
	watchdog := time.AfterFunc(5*time.Minute, func() {
		for _, c := range cs {
			_ = c.cmd.Process.Kill()
		}
	})
	outs := make([][]string, children)
	var wg sync.WaitGroup
	for i, c := range cs {
		wg.Go(func() {
			for l := range c.lines {
				outs[i] = append(outs[i], l)
			}
		})
	}
	wg.Wait()
	watchdog.Stop()
	for i, c := range cs {
		if err := c.wait(); err != nil {
			t.Errorf("child %d: %v; stderr:\n%s", i, err, c.stderr.String())
		}
	}
	if t.Failed() {
		t.FailNow()
	}

	l := newProcLedger()
	var busy, conflicts int64
	lastPos := map[[2]int]int64{} // (child, worker) -> last acknowledged position
	for i, lines := range outs {
		done := false
		for _, line := range lines {
			kind, m := procParse(t, line)
			switch kind {
			case "ACK":
				if m.Child != i {
					t.Fatalf("child %d reported an append of child %d", i, m.Child)
				}
				// One goroutine's appends commit in the order it made them.
				w := [2]int{m.Child, m.Worker}
				if m.Events[0].Position <= lastPos[w] {
					t.Errorf("child %d worker %d: position %d acknowledged after %d", m.Child, m.Worker, m.Events[0].Position, lastPos[w])
				}
				lastPos[w] = m.Events[len(m.Events)-1].Position
				l.ack(t, m)
			case "DONE":
				var st procStats
				if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "DONE ")), &st); err != nil {
					t.Fatal(err)
				}
				busy += st.Busy
				conflicts += st.Conflicts
				done = true
			case "PASS":
			default:
				t.Errorf("child %d: unexpected line %q", i, line)
			}
		}
		if !done {
			t.Errorf("child %d did not report DONE", i)
		}
	}
	if want := children * n; l.appends != want {
		t.Errorf("%d appends acknowledged, want %d", l.appends, want)
	}
	facts := procVerifyLog(t, path, l)
	// Every append was acknowledged, so the log holds exactly those events.
	if facts.head != int64(len(l.acked)) {
		t.Errorf("head %d, want %d (the acknowledged events)", facts.head, len(l.acked))
	}
	t.Logf("%d processes x %d appends: %d events acknowledged, head %d, %d ErrBusy retried, %d conflicts on the contended stream, %v",
		children, n, len(l.acked), facts.head, busy, conflicts, time.Since(start).Round(time.Millisecond))
}

// TestMultiProcessOpen has several processes create and open one new file
// at the same moment, round after round: the switch to WAL (which SQLite's
// busy timeout does not cover) and the migrations race, and no process
// may fail to open or to append.
func TestMultiProcessOpen(t *testing.T) {
	const children = 6
	rounds := 40
	if testing.Short() {
		rounds = 4
	}
	start := time.Now()
	dir := t.TempDir()
	cs := make([]*procChild, children)
	for i := range cs {
		cs[i] = startProcChild(t, "open", envChild+"="+strconv.Itoa(i))
	}
	for i, c := range cs {
		if l, ok := procNextLine(t, c); !ok || l != "READY" {
			t.Fatalf("child %d: first line %q, want READY; stderr:\n%s", i, l, c.stop())
		}
	}
	for round := range rounds {
		path := filepath.Join(dir, fmt.Sprintf("open-%d.db", round))
		for _, c := range cs {
			if _, err := io.WriteString(c.stdin, path+"\n"); err != nil {
				t.Fatal(err)
			}
		}
		l := newProcLedger()
		for i, c := range cs {
			line, ok := procNextLine(t, c)
			if !ok {
				t.Fatalf("round %d: child %d ended; stderr:\n%s", round, i, c.stop())
			}
			kind, m := procParse(t, line)
			if kind != "ACK" {
				t.Fatalf("round %d: child %d said %q", round, i, line)
			}
			l.ack(t, m)
		}
		if facts := procVerifyLog(t, path, l); facts.head != children {
			t.Fatalf("round %d: head %d, want %d", round, facts.head, children)
		}
	}
	for _, c := range cs {
		_ = c.stdin.Close()
	}
	for i, c := range cs {
		for l := range c.lines {
			if l != "PASS" {
				t.Errorf("child %d: unexpected line %q", i, l)
			}
		}
		if err := c.wait(); err != nil {
			t.Errorf("child %d: %v; stderr:\n%s", i, err, c.stderr.String())
		}
	}
	t.Logf("%d rounds of %d processes opening a new file at once: all opened; %v", rounds, children, time.Since(start).Round(time.Millisecond))
}

// TestSchemaTooNew opens files whose user_version is above this binary's
// schema: Open refuses them with ErrSchemaTooNew and a message that says
// to upgrade, and leaves every byte of them (and their directory) as it was.
func TestSchemaTooNew(t *testing.T) {
	ctx := context.Background()
	newer := store.SchemaVersion() + 1
	tests := []struct {
		name string
		// setup writes the file; the test then raises its user_version.
		setup func(t *testing.T, path string)
	}{
		{"eventlite file", func(t *testing.T, path string) {
			s, err := store.Open(ctx, path, nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.Append(ctx, "default", "order-1", store.NoStream,
				envelope.Event{Source: "/test", Type: "order.placed", Data: []byte(`{"total":42}`)}); err != nil {
				t.Fatal(err)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
		}},
		// A file in rollback-journal mode, as another program (or a
		// future eventlite) may leave it: Open must not even switch it
		// to WAL before refusing it.
		{"rollback-journal file", func(t *testing.T, path string) {
			storetest.RawExec(t, path, `CREATE TABLE future (x)`, `INSERT INTO future VALUES (1)`)
		}},
		{"empty file", func(t *testing.T, path string) {}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "newer.db")
			tc.setup(t, path)
			storetest.RawExec(t, path, fmt.Sprintf("PRAGMA user_version = %d", newer))
			mode := rawQueryString(t, path, "PRAGMA journal_mode")
			before := storetest.DirDigest(t, dir)

			s, err := store.Open(ctx, path, nil)
			if err == nil {
				_ = s.Close()
				t.Fatalf("Open accepted a file with schema %d (this binary: %d)", newer, store.SchemaVersion())
			}
			if !errors.Is(err, store.ErrSchemaTooNew) {
				t.Fatalf("Open: %v; want an error matching ErrSchemaTooNew", err)
			}
			msg := err.Error()
			for _, want := range []string{"upgrade", strconv.Itoa(newer), strconv.Itoa(store.SchemaVersion())} {
				if !strings.Contains(msg, want) {
					t.Errorf("error %q does not mention %q", msg, want)
				}
			}
			if diff := cmp.Diff(before, storetest.DirDigest(t, dir)); diff != "" {
				t.Errorf("Open changed the files it refused (-before +after):\n%s", diff)
			}
			if got := rawQueryString(t, path, "PRAGMA user_version"); got != strconv.Itoa(newer) {
				t.Errorf("user_version %s after the refusal, want %d", got, newer)
			}
			if got := rawQueryString(t, path, "PRAGMA journal_mode"); got != mode {
				t.Errorf("journal_mode %s after the refusal, want %s", got, mode)
			}
		})
	}
}

// TestPragmas checks that every connection of an open store (the writer
// and each read connection) runs with the settings the options ask for:
// by default synchronous=FULL, WAL, foreign keys on, mmap off, a 5 s busy
// timeout. It also checks from outside that the file itself is in WAL
// mode and that the writer enforces foreign keys.
func TestPragmas(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name string
		opts *store.Options
		// want: the values every connection must report
		synchronous, busyTimeout, journalSizeLimit string
		readConns                                  int
	}{
		{"defaults", nil, "2", "5000", strconv.Itoa(64 << 20), 4},
		{"normal", &store.Options{Synchronous: "normal", BusyTimeout: 1500 * time.Millisecond, JournalSizeLimit: 1 << 20, ReadConns: 2}, "1", "1500", strconv.Itoa(1 << 20), 2},
		// One read connection: the change poller holds its own, so reads
		// must still get one.
		{"one read connection", &store.Options{Synchronous: "FULL", ReadConns: 1}, "2", "5000", strconv.Itoa(64 << 20), 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "pragmas.db")
			s, err := store.Open(ctx, path, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			// A bound on every call: a pool that starves its readers must
			// fail this test, not hang it.
			ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			t.Cleanup(func() {
				defer cancel()
				if err := s.CheckInvariants(ctx); err != nil {
					t.Errorf("after the test: %v", err)
				}
				if err := s.Close(); err != nil {
					t.Errorf("close: %v", err)
				}
			})
			got, err := store.Pragmas(ctx, s)
			if err != nil {
				t.Fatalf("Pragmas: %v", err)
			}
			want := map[string]string{}
			conns := []string{"writer"}
			for i := range tc.readConns {
				conns = append(conns, fmt.Sprintf("read%d", i+1))
			}
			for _, c := range conns {
				want[c+".journal_mode"] = "wal"
				want[c+".synchronous"] = tc.synchronous
				want[c+".foreign_keys"] = "1"
				want[c+".busy_timeout"] = tc.busyTimeout
				want[c+".mmap_size"] = "0"
				want[c+".journal_size_limit"] = tc.journalSizeLimit
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("pragmas (-want +got):\n%s", diff)
			}

			// Reads work while the poller holds its connection.
			if _, err := s.Head(ctx); err != nil {
				t.Errorf("Head: %v", err)
			}
			// The writer refuses an outbox row for an event that does not
			// exist: foreign keys are enforced where it matters.
			err = s.Update(ctx, func(tx *store.Tx) error {
				_, err := tx.ExecContext(ctx, `INSERT INTO outbox (position) VALUES (?)`, int64(1)<<40)
				return err
			})
			var se *sqlite.Error
			if !errors.As(err, &se) || se.Code() != sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY {
				t.Errorf("outbox row without its event: got %v, want a foreign key error", err)
			}
			// WAL is a property of the file: another connection sees it.
			if mode := rawQueryString(t, path, "PRAGMA journal_mode"); mode != "wal" {
				t.Errorf("journal_mode of the file seen from outside: %s, want wal", mode)
			}
			if v := rawQueryString(t, path, "PRAGMA user_version"); v != strconv.Itoa(store.SchemaVersion()) {
				t.Errorf("user_version %s, want %d", v, store.SchemaVersion())
			}
		})
	}
}
