package store_test

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/projection"
	"github.com/eventlite/eventlite/publish"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/internal/driver"
	"github.com/eventlite/eventlite/store/outbox"
	"github.com/eventlite/eventlite/store/storetest"
)

// TestPostgresMultihost stands for several hosts sharing one PostgreSQL
// store: four helper processes (this test binary again, running
// TestPostgresMultihostHelper), each with a store of its own on the same
// schema, append to their own and to shared streams, and each runs the
// outbox relay (to an HTTP sink in this process) and a projection runner
// (counting applications per event id in its own table). The parent
// SIGKILLs a random helper again and again and starts a fresh one in its
// place; every fifth round it first SIGSTOPs the helper whose runner holds
// the projection's lease until another runner took it over (the paused
// runner must then write nothing); once, it SIGSTOPs a helper in the
// middle of an Update that holds the log's head row, shows that the
// others' appends go on once the server ends the stopped session, and
// that the helper recovers after SIGCONT.
// At the end, with every helper gone, a clean store relays and catches
// up, and the test proves: no acknowledged append lost, positions gap
// free, every stream delivered in order (new versions in order, repeats
// allowed: at least once), every event delivered, every event projected
// exactly once, and the store's invariants.
//
// Helpers talk on stdout, one line per message:
//
//	READY            the store is open; the relay and the runner run
//	ACK <n>          the n-th append is acknowledged and its record fsynced
//	HOLDING          inside an Update that appended (it holds the head row)
//	HELD <error>     that Update returned ("HELD ok" when it committed)
//	RECOVERED        the first append after the hold succeeded
//	LOST <error>     a call met a session the server ended; it is retried
//	RESTART <error>  the projection runner returned; it runs again
//
// and take commands on stdin: HOLD (hold the head row before the next
// append), RELEASE (let the held Update return). Every acknowledged append
// is recorded in the helper's own file before it says ACK, so the parent
// knows what was acknowledged whenever it kills a helper.
func TestPostgresMultihost(t *testing.T) {
	base := storetest.PostgresBase(t)
	kills := 50
	if testing.Short() {
		kills = 4
	}
	seed := testSeed(t)
	rnd := rand.New(rand.NewPCG(seed, 0))
	// The server ends a session idle inside a transaction after 3 s: the
	// stopped helper's, which holds the head row.
	addr := storetest.PostgresSchema(t, base) + "&idle_in_transaction_session_timeout=3000"
	sink := newMHSink(t)
	ctx := context.Background()
	// The parent's store creates the schema, and is the clean store of
	// the end.
	s := openAddr(t, addr, &store.Options{PollInterval: 50 * time.Millisecond})

	u, err := url.Parse(addr)
	if err != nil {
		t.Fatal(err)
	}
	c := &mhCluster{t: t, base: base, schema: u.Query().Get("eventlite_schema"), addr: addr, sink: sink.srv.URL, dir: t.TempDir(), seed: seed, wake: make(chan struct{}, 1)}
	for slot := range mhSlots {
		c.slots[slot] = c.start(slot)
	}
	for _, h := range c.slots {
		c.waitUntil(h.name+" to be ready", time.Minute, func() bool { return h.saw("READY") })
	}

	held, paused := "", 0
	for k := range kills {
		if k == kills/2 {
			held = c.stopAndResume(rnd)
		}
		if k%5 == 2 && c.pauseRunner(s) {
			paused++
		}
		slot := rnd.IntN(mhSlots)
		h := c.slots[slot]
		// Kill at readiness, or after a few acknowledged appends: in the
		// middle of appends, relay batches and projection batches.
		n := rnd.IntN(8)
		c.waitUntil(fmt.Sprintf("%s to acknowledge %d appends", h.name, n), time.Minute, func() bool {
			return h.saw("READY") && h.ackCount() >= n
		})
		c.kill(h)
		c.slots[slot] = c.start(slot)
	}
	// Every slot's last helper gets going before the end, so that the
	// last restarts ran too.
	for _, h := range c.slots {
		c.waitUntil(h.name+" to acknowledge an append", time.Minute, func() bool { return h.ackCount() >= 1 })
	}
	for _, h := range c.slots {
		c.kill(h)
	}
	// The helpers' relays and runners did their part before the end.
	delivered, projected := sink.count(), len(c.applied())
	t.Logf("%d helpers ran, %d killed, %d paused past the projection's lease; their relays made %d deliveries, their runners projected %d events; retried: %v",
		c.started, kills+mhSlots, paused, delivered, projected, c.restarts())
	for _, why := range c.retryReasons() {
		t.Logf("a helper retried after: %s", why)
	}
	if delivered == 0 || projected == 0 {
		t.Errorf("the helpers' relays delivered %d events and their runners projected %d: want some of each", delivered, projected)
	}

	// One clean store relays and catches up.
	rctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	pub, err := publish.NewHTTP(publish.HTTPOptions{URL: sink.srv.URL, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	relay, err := publish.New(mhRelayOptions(s, pub, "final", true))
	if err != nil {
		t.Fatal(err)
	}
	if err := relay.Run(rctx); err != nil {
		t.Fatalf("final relay: %v", err)
	}
	head, err := s.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	runner, err := projection.NewRunner(s, mhProjection(), mhRunnerOptions("final"))
	if err != nil {
		t.Fatal(err)
	}
	pctx, stop := context.WithCancel(rctx)
	ran := make(chan error, 1)
	go func() { ran <- runner.Run(pctx) }()
	if err := projection.WaitFor(rctx, s, mhCountTable, head); err != nil {
		t.Fatalf("final projection runner to reach the head %d: %v", head, err)
	}
	stop()
	if err := <-ran; err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("final projection runner: %v", err)
	}

	c.check(s, sink, held)
}

// mhSlots is how many helpers run at once.
const mhSlots = 4

// The helper's environment.
const (
	mhEnvName = "EVENTLITE_MH_NAME" // the helper's name, unique in the test; set only in helpers
	mhEnvAddr = "EVENTLITE_MH_ADDR" // the store's address
	mhEnvAcks = "EVENTLITE_MH_ACKS" // the file of its acknowledged appends
	mhEnvSink = "EVENTLITE_MH_SINK" // the HTTP sink's URL
	mhEnvSeed = "EVENTLITE_MH_SEED" // its random seed
)

// mhCountTable is the projection's name and its table's: one row per
// event id with the number of times the event was applied.
const mhCountTable = "mh_counts"

// mhProjection counts applications per event id in the runner's
// transaction: a count above 1 is an event applied twice.
func mhProjection() projection.Projection {
	return projection.Projection{
		Name: mhCountTable,
		Tables: []projection.Table{{Name: mhCountTable, Schemas: map[store.Dialect]string{
			store.DialectPostgres: `CREATE TABLE {table} (event_id TEXT COLLATE "C" PRIMARY KEY, applied BIGINT NOT NULL)`,
		}}},
		Apply: func(ctx context.Context, tx *projection.Tx, e envelope.Event) error {
			_, err := tx.ExecContext(ctx, `INSERT INTO `+tx.Table(mhCountTable)+` AS c (event_id, applied) VALUES ($1, 1)
				ON CONFLICT (event_id) DO UPDATE SET applied = c.applied + 1`, e.ID)
			return err
		},
	}
}

// mhRelayOptions and mhRunnerOptions take short leases, so that a killed
// holder's relay or runner is replaced within a second.
func mhRelayOptions(s *store.Store, pub publish.Publisher, owner string, once bool) publish.Options {
	return publish.Options{
		Store: s, Publisher: pub, Owner: owner, Once: once,
		LeaseTTL: time.Second, RenewEvery: 250 * time.Millisecond,
		BatchSize: 64, PollInterval: 100 * time.Millisecond,
		RetryBase: 10 * time.Millisecond, RetryMax: 200 * time.Millisecond,
		BackoffBase: 10 * time.Millisecond, BackoffMax: 200 * time.Millisecond,
	}
}

func mhRunnerOptions(owner string) *projection.RunnerOptions {
	return &projection.RunnerOptions{Owner: owner, LeaseTTL: time.Second, RenewEvery: 250 * time.Millisecond, BatchSize: 64}
}

// mhAck is one acknowledged append as a helper records it.
type mhAck struct {
	Tenant    string   `json:"t"`
	Stream    string   `json:"s"`
	IDs       []string `json:"ids"`
	Versions  []int64  `json:"v"`
	Positions []int64  `json:"p"`
}

// ---- the helper's side ----

// TestPostgresMultihostHelper is the body of TestPostgresMultihost's
// helper processes; it does nothing in a normal run.
func TestPostgresMultihostHelper(t *testing.T) {
	if os.Getenv(mhEnvName) == "" {
		t.Skip("runs only as a helper process of TestPostgresMultihost")
	}
	mhHelperMain()
}

var mhOut sync.Mutex

// mhSay writes one line to stdout with one write.
func mhSay(line string) {
	mhOut.Lock()
	defer mhOut.Unlock()
	if _, err := os.Stdout.WriteString(line + "\n"); err != nil {
		mhFail("write %q: %v", line, err)
	}
}

// mhFail says why on stderr and exits 3: the parent fails the test.
func mhFail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "helper %s: %s\n", os.Getenv(mhEnvName), fmt.Sprintf(format, args...))
	os.Exit(3)
}

// mhHelperMain is a helper's life: it opens the store, starts the relay
// and the runner, and appends until it is killed, holding the head row
// once when the parent says HOLD.
func mhHelperMain() {
	ctx := context.Background()
	name := os.Getenv(mhEnvName)
	seed, err := strconv.ParseUint(os.Getenv(mhEnvSeed), 10, 64)
	if err != nil {
		mhFail("%s: %v", mhEnvSeed, err)
	}
	rnd := rand.New(rand.NewPCG(seed, 0))
	log := hclog.New(&hclog.LoggerOptions{Name: name, Level: hclog.Warn, Output: os.Stderr})
	s, err := store.Open(ctx, os.Getenv(mhEnvAddr), &store.Options{PollInterval: 50 * time.Millisecond, Logger: log})
	if err != nil {
		mhFail("open: %v", err)
	}
	acks, err := os.OpenFile(os.Getenv(mhEnvAcks), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		mhFail("ack file: %v", err)
	}
	pub, err := publish.NewHTTP(publish.HTTPOptions{URL: os.Getenv(mhEnvSink), Timeout: 10 * time.Second, Logger: log})
	if err != nil {
		mhFail("publisher: %v", err)
	}
	ro := mhRelayOptions(s, pub, name, false)
	ro.Logger = log
	relay, err := publish.New(ro)
	if err != nil {
		mhFail("relay: %v", err)
	}
	po := mhRunnerOptions(name)
	po.Logger = log
	runner, err := projection.NewRunner(s, mhProjection(), po)
	if err != nil {
		mhFail("projection runner: %v", err)
	}
	// The relay returns only when ctx ends, which it never does: the
	// helper runs until it is killed.
	go func() { mhFail("relay stopped: %v", relay.Run(ctx)) }()
	go func() {
		for {
			// Run returns when the runner lost its lease (stalled or
			// paused past it), at a busy database, and when the server
			// ended its session in the middle of a batch: a service
			// runs it again, and so does the helper, saying so.
			err := runner.Run(ctx)
			if !errors.Is(err, store.ErrStaleFence) && !mhTransient(err) {
				mhFail("projection runner stopped: %v", err)
			}
			mhSay("RESTART " + strings.ReplaceAll(err.Error(), "\n", " "))
		}
	}()

	hold := make(chan struct{}, 1)
	release := make(chan struct{})
	go func() {
		in := bufio.NewScanner(os.Stdin)
		for in.Scan() {
			switch in.Text() {
			case "HOLD":
				hold <- struct{}{}
			case "RELEASE":
				close(release)
			default:
				mhFail("unknown command %q", in.Text())
			}
		}
		os.Exit(0) // the parent is gone
	}()
	mhSay("READY")

	var own [2]int64 // the versions of the helper's own streams
	recovering := false
	for i := 1; ; i++ {
		select {
		case <-hold:
			mhHold(ctx, s, acks, name, release)
			recovering = true
		default:
		}
		a := mhAck{Tenant: "default"}
		o := rnd.IntN(len(own))
		shared := rnd.IntN(2) == 0
		if shared {
			a.Tenant, a.Stream = "acme", fmt.Sprintf("shared-%d", rnd.IntN(3))
		} else {
			a.Stream = fmt.Sprintf("own-%s-%d", name, o)
		}
		evs := make([]envelope.Event, 1+rnd.IntN(3))
		for j := range evs {
			evs[j] = envelope.Event{ID: fmt.Sprintf("%s-%d-%d", name, i, j), Source: "/eventlite/multihost-test",
				Type: "mh.appended", Data: fmt.Appendf(nil, `{"i":%d,"j":%d}`, i, j)}
		}
		var res store.AppendResult
		if shared {
			res = mhAppendShared(ctx, s, a.Tenant, a.Stream, evs)
		} else {
			res = mhAppendRetry(ctx, s, a.Tenant, a.Stream, store.Exact(own[o]), evs)
			own[o] = res.Version
		}
		mhRecord(acks, a, res)
		mhSay(fmt.Sprintf("ACK %d", i))
		if recovering {
			mhSay("RECOVERED")
			recovering = false
		}
	}
}

// mhHold appends in an Update and, holding the head row, waits for the
// parent to stop and resume the process and say RELEASE. The server ends
// the session meanwhile, so the Update fails; should it commit after all,
// the append is recorded as acknowledged.
func mhHold(ctx context.Context, s *store.Store, acks *os.File, name string, release <-chan struct{}) {
	a := mhAck{Tenant: "default", Stream: "held-" + name}
	var res store.AppendResult
	err := s.Update(ctx, func(tx *store.Tx) error {
		var err error
		res, err = tx.Append(ctx, a.Tenant, a.Stream, store.NoStream, envelope.Event{
			ID: "held-" + name, Source: "/eventlite/multihost-test", Type: "mh.appended", Data: []byte(`{"held":true}`)})
		if err != nil {
			return err
		}
		mhSay("HOLDING")
		<-release
		return nil
	})
	if err != nil {
		mhSay("HELD " + strings.ReplaceAll(err.Error(), "\n", " "))
		return
	}
	mhRecord(acks, a, res)
	mhSay("HELD ok")
}

// mhTransient tells the errors a service retries, by the public
// store.Retryable only: a busy database (another host held the head row
// past the lock timeout), and a session the server ended (a paused
// host's, idle in its transaction too long), which the store replaces at
// its next write.
func mhTransient(err error) bool {
	if store.Classify(err) == driver.ConnectionLost || errors.Is(err, sql.ErrConnDone) {
		mhSay("LOST " + strings.ReplaceAll(err.Error(), "\n", " "))
	}
	return store.Retryable(err)
}

// mhAppendRetry appends, retrying transient errors with the same events:
// should a try whose session ended have committed after all, the retry
// returns the stored append.
func mhAppendRetry(ctx context.Context, s *store.Store, tenant, stream string, exp store.Expected, evs []envelope.Event) store.AppendResult {
	for range 1000 {
		res, err := s.Append(ctx, tenant, stream, exp, evs...)
		if err == nil {
			return res
		}
		if !mhTransient(err) {
			mhFail("append to %s/%s at %s: %v", tenant, stream, exp, err)
		}
	}
	mhFail("append to %s/%s: busy 1000 times", tenant, stream)
	return store.AppendResult{}
}

// mhAppendShared appends to a stream other helpers append to: it reads
// the version, appends on exactly that version, and reads again when
// another helper won.
func mhAppendShared(ctx context.Context, s *store.Store, tenant, stream string, evs []envelope.Event) store.AppendResult {
	for range 1000 {
		v, err := s.StreamVersion(ctx, tenant, stream)
		if err != nil {
			if mhTransient(err) {
				continue
			}
			mhFail("version of %s/%s: %v", tenant, stream, err)
		}
		res, err := s.Append(ctx, tenant, stream, store.Exact(v), evs...)
		if err == nil {
			return res
		}
		if !mhTransient(err) && !errors.Is(err, store.ErrConflict) {
			mhFail("append to %s/%s at %d: %v", tenant, stream, v, err)
		}
	}
	mhFail("append to %s/%s: 1000 conflicts or busy answers in a row", tenant, stream)
	return store.AppendResult{}
}

// mhRecord writes the acknowledged append to the helper's file, in one
// write, and syncs it before the helper says ACK.
func mhRecord(f *os.File, a mhAck, res store.AppendResult) {
	for _, e := range res.Events {
		a.IDs = append(a.IDs, e.ID)
		a.Versions = append(a.Versions, e.StreamVersion)
		a.Positions = append(a.Positions, e.Position)
	}
	b, err := json.Marshal(a)
	if err != nil {
		mhFail("encode ack: %v", err)
	}
	if _, err := f.Write(append(b, '\n')); err != nil {
		mhFail("record ack: %v", err)
	}
	if err := f.Sync(); err != nil {
		mhFail("sync ack: %v", err)
	}
}

// ---- the parent's side ----

// mhCluster is the parent's view of its helpers.
type mhCluster struct {
	t       *testing.T
	base    string // the server's address, for the test's own connection
	schema  string // the store's schema
	addr    string // the store's address
	sink    string
	dir     string
	seed    uint64
	started int
	slots   [mhSlots]*mhProc
	all     []*mhProc
	wake    chan struct{} // poked at every helper's line and exit
}

// mhProc is one helper process.
type mhProc struct {
	name   string
	acks   string // its ack file
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	exited chan struct{}

	mu     sync.Mutex
	lines  []string
	nacks  int
	killed bool // by the parent: an exit is expected
	stderr bytes.Buffer
}

func (h *mhProc) Write(p []byte) (int, error) { // stderr
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.stderr.Write(p)
}

func (h *mhProc) saw(prefix string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, l := range h.lines {
		if strings.HasPrefix(l, prefix) {
			return true
		}
	}
	return false
}

func (h *mhProc) line(prefix string) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, l := range h.lines {
		if strings.HasPrefix(l, prefix) {
			return l
		}
	}
	return ""
}

func (h *mhProc) ackCount() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.nacks
}

func (h *mhProc) errors() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.stderr.String()
}

func (c *mhCluster) poke() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// start starts a helper in slot's place.
func (c *mhCluster) start(slot int) *mhProc {
	t := c.t
	t.Helper()
	c.started++
	name := fmt.Sprintf("h%dn%d", slot, c.started)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// -test.timeout: a helper orphaned by a dying parent still ends.
	cmd := exec.Command(exe, "-test.run=^TestPostgresMultihostHelper$", "-test.count=1", "-test.timeout=10m")
	h := &mhProc{name: name, acks: filepath.Join(c.dir, name+".acks"), cmd: cmd, exited: make(chan struct{})}
	cmd.Env = append(os.Environ(),
		mhEnvName+"="+name, mhEnvAddr+"="+c.addr, mhEnvAcks+"="+h.acks, mhEnvSink+"="+c.sink,
		fmt.Sprintf("%s=%d", mhEnvSeed, c.seed+uint64(c.started)),
		"GORACE="+strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	cmd.Stderr = h
	if h.stdin, err = cmd.StdinPipe(); err != nil {
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
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			h.mu.Lock()
			h.lines = append(h.lines, sc.Text())
			if strings.HasPrefix(sc.Text(), "ACK ") {
				h.nacks++
			}
			h.mu.Unlock()
			c.poke()
		}
		_ = cmd.Wait()
		close(h.exited)
		c.poke()
	}()
	c.all = append(c.all, h)
	t.Cleanup(func() {
		c.kill(h)
		if t.Failed() && h.errors() != "" {
			t.Logf("%s stderr:\n%s", h.name, h.errors())
		}
	})
	return h
}

// kill SIGKILLs the helper and waits for it to exit.
func (c *mhCluster) kill(h *mhProc) {
	h.mu.Lock()
	h.killed = true
	h.mu.Unlock()
	_ = h.cmd.Process.Signal(syscall.SIGKILL)
	<-h.exited
}

// waitUntil waits for cond, waking at every line a helper says and at
// every exit; a helper that exits unasked fails the test.
func (c *mhCluster) waitUntil(what string, within time.Duration, cond func() bool) {
	c.t.Helper()
	timeout := time.After(within)
	for {
		if cond() {
			return
		}
		for _, h := range c.all {
			select {
			case <-h.exited:
				h.mu.Lock()
				killed := h.killed
				h.mu.Unlock()
				if !killed {
					c.t.Fatalf("waiting for %s: helper %s exited (%v) unasked", what, h.name, h.cmd.ProcessState)
				}
			default:
			}
		}
		select {
		case <-c.wake:
		case <-timeout:
			c.t.Fatalf("timed out after %s waiting for %s", within, what)
		}
	}
}

func (c *mhCluster) tell(h *mhProc, cmd string) {
	c.t.Helper()
	if _, err := io.WriteString(h.stdin, cmd+"\n"); err != nil {
		c.t.Fatalf("tell %s %s: %v", h.name, cmd, err)
	}
}

// stopAndResume has a helper hold the head row in an Update and SIGSTOPs
// it there: the others' appends must go on once the server ends the
// stopped session (the idle-in-transaction timeout). Then it resumes the
// helper, which must recover (or exit cleanly). It returns the held
// event's id when the held Update failed, "" otherwise.
func (c *mhCluster) stopAndResume(rnd *rand.Rand) string {
	t := c.t
	t.Helper()
	h := c.slots[rnd.IntN(mhSlots)]
	c.waitUntil(h.name+" to acknowledge an append", time.Minute, func() bool { return h.ackCount() >= 1 })
	c.tell(h, "HOLD")
	c.waitUntil(h.name+" to hold the head row", time.Minute, func() bool { return h.saw("HOLDING") })
	held := time.Now()
	if err := h.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	before := map[*mhProc]int{}
	for _, o := range c.slots {
		if o != h {
			before[o] = o.ackCount()
		}
	}
	c.waitUntil("the other helpers to append while "+h.name+" is stopped holding the head row", time.Minute, func() bool {
		for o, n := range before {
			if o.ackCount() < n+2 {
				return false
			}
		}
		return true
	})
	// The hold must have blocked them: the first append that counts
	// began after the hold took the head row, and could not commit
	// before the server ended the held session, 3 s after it went idle
	// (just before it said HOLDING).
	waited := time.Since(held)
	t.Logf("%s stopped holding the head row: every other helper appended again %s after it said HOLDING", h.name, waited.Round(time.Millisecond))
	if waited < 2*time.Second {
		t.Errorf("the other helpers appended %s after %s took the head row: the hold did not block them", waited, h.name)
	}
	if err := h.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	c.tell(h, "RELEASE")
	acked := h.ackCount()
	recovered := func() bool { return h.saw("RECOVERED") && h.ackCount() > acked }
	exitedCleanly := func() bool {
		select {
		case <-h.exited:
			return h.cmd.ProcessState.ExitCode() == 0
		default:
			return false
		}
	}
	// An unclean exit fails in waitUntil.
	c.waitUntil(h.name+" to recover after SIGCONT", time.Minute, func() bool { return recovered() || exitedCleanly() })
	heldLine := h.line("HELD ")
	t.Logf("%s resumed: its held Update returned %q; recovered: %v", h.name, strings.TrimPrefix(heldLine, "HELD "), recovered())
	if heldLine == "HELD ok" {
		t.Errorf("%s's held Update committed after its session sat idle in a transaction past the server's timeout", h.name)
		return ""
	}
	if heldLine == "" {
		return ""
	}
	return "held-" + h.name
}

// pauseRunner SIGSTOPs the helper whose runner holds the projection's
// lease, and SIGCONTs it once another helper's runner took the lease
// over: the paused runner, resumed maybe in the middle of a batch, must
// write nothing (its lease's fence refuses the batch). It reports whether
// it paused a helper (the lease may be free, or its holder killed).
func (c *mhCluster) pauseRunner(s *store.Store) bool {
	t := c.t
	t.Helper()
	resource := projection.LeaseResource(mhCountTable)
	owner, token := c.lease(s, resource)
	var h *mhProc
	for _, o := range c.slots {
		if o.name == owner {
			h = o
		}
	}
	if h == nil {
		return false
	}
	if err := h.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	// The lease is read at the helpers' lines, at most every 20 ms.
	var last time.Time
	c.waitUntil("another runner to take the projection's lease from stopped "+h.name, time.Minute, func() bool {
		if time.Since(last) < 20*time.Millisecond {
			return false
		}
		last = time.Now()
		o, tok := c.lease(s, resource)
		return o != "" && o != h.name && tok > token
	})
	if err := h.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	return true
}

// restarts counts what the helpers retried: calls that met a session the
// server ended, and runners run again after losing their lease.
func (c *mhCluster) restarts() map[string]int {
	n := map[string]int{}
	for _, h := range c.all {
		h.mu.Lock()
		for _, l := range h.lines {
			switch {
			case strings.HasPrefix(l, "LOST "):
				n["session ended"]++
			case strings.HasPrefix(l, "RESTART ") && strings.Contains(l, store.ErrStaleFence.Error()):
				n["runner lost its lease"]++
			}
		}
		h.mu.Unlock()
	}
	return n
}

// retryReasons lists the distinct errors the helpers retried after, their
// schema's name left out.
func (c *mhCluster) retryReasons() []string {
	seen := map[string]bool{}
	var out []string
	for _, h := range c.all {
		h.mu.Lock()
		for _, l := range h.lines {
			if strings.HasPrefix(l, "LOST ") || strings.HasPrefix(l, "RESTART ") {
				l = strings.ReplaceAll(l, c.schema, "<schema>")
				if !seen[l] {
					seen[l] = true
					out = append(out, l)
				}
			}
		}
		h.mu.Unlock()
	}
	return out
}

// lease returns the owner and token of resource's lease, "" when free.
func (c *mhCluster) lease(s *store.Store, resource string) (string, int64) {
	c.t.Helper()
	ls, err := s.Leases().List(context.Background())
	if err != nil {
		c.t.Fatal(err)
	}
	for _, l := range ls {
		if l.Resource == resource && !l.Expired {
			return l.Owner, l.Token
		}
	}
	return "", 0
}

// check proves the run's guarantees on the final state.
func (c *mhCluster) check(s *store.Store, sink *mhSink, held string) {
	t := c.t
	ctx := context.Background()
	bad := &mhFindings{t: t}
	defer bad.summary()
	type key struct{ tenant, stream string }
	// The log: positions gap free from 1, versions gap free per stream.
	byID := map[string]envelope.Event{}
	versions := map[key]int64{}
	var pos int64
	for e, err := range s.ReadAll(ctx, store.ReadAllOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		pos++
		if e.Position != pos {
			t.Fatalf("position %d follows %d: positions must be gap free and strictly increasing", e.Position, pos-1)
		}
		k := key{e.Tenant, e.Stream}
		if e.StreamVersion != versions[k]+1 {
			bad.Errorf("%s/%s: version %d follows %d", e.Tenant, e.Stream, e.StreamVersion, versions[k])
		}
		versions[k] = e.StreamVersion
		if _, dup := byID[e.ID]; dup {
			bad.Errorf("event id %s stored twice", e.ID)
		}
		byID[e.ID] = e
	}
	if pos == 0 {
		t.Fatal("the log is empty")
	}

	// No acknowledged append lost.
	acked := 0
	for _, h := range c.all {
		b, err := os.ReadFile(h.acks)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
		for l := range strings.Lines(string(b)) {
			if !strings.HasSuffix(l, "\n") {
				continue // cut off by the kill: not acknowledged
			}
			var a mhAck
			if err := json.Unmarshal([]byte(l), &a); err != nil {
				t.Fatalf("%s: ack %q: %v", h.acks, l, err)
			}
			for i, id := range a.IDs {
				acked++
				e, ok := byID[id]
				switch {
				case !ok:
					bad.Errorf("acknowledged event %s (%s/%s v%d at %d) is not in the log", id, a.Tenant, a.Stream, a.Versions[i], a.Positions[i])
				case e.Tenant != a.Tenant || e.Stream != a.Stream || e.StreamVersion != a.Versions[i] || e.Position != a.Positions[i]:
					bad.Errorf("acknowledged event %s as %s/%s v%d at %d; the log has %s/%s v%d at %d", id,
						a.Tenant, a.Stream, a.Versions[i], a.Positions[i], e.Tenant, e.Stream, e.StreamVersion, e.Position)
				}
			}
		}
	}
	if held != "" {
		if _, ok := byID[held]; ok {
			bad.Errorf("the stopped helper's held event %s is in the log, though its Update failed", held)
		}
	}

	// Deliveries: each stream's versions delivered for the first time in
	// order; repeats (at least once) anywhere; every event delivered.
	deliveries := sink.all()
	next := map[key]int64{}
	repeats := 0
	for _, d := range deliveries {
		e, ok := byID[d.id]
		if !ok {
			bad.Errorf("delivered event %s is not in the log", d.id)
			continue
		}
		if d.tenant != e.Tenant || d.stream != e.Stream || d.version != e.StreamVersion || d.position != e.Position {
			bad.Errorf("event %s delivered as %s/%s v%d at %d; the log has %s/%s v%d at %d", d.id,
				d.tenant, d.stream, d.version, d.position, e.Tenant, e.Stream, e.StreamVersion, e.Position)
			continue
		}
		k := key{d.tenant, d.stream}
		switch {
		case d.version == next[k]+1:
			next[k] = d.version
		case d.version <= next[k]:
			repeats++
		default:
			bad.Errorf("%s/%s: version %d delivered before version %d", d.tenant, d.stream, d.version, next[k]+1)
		}
	}
	for k, v := range versions {
		if next[k] != v {
			bad.Errorf("%s/%s: delivered up to version %d of %d", k.tenant, k.stream, next[k], v)
		}
	}
	st, err := outbox.For(s).Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Pending != 0 || st.DeadLettered != 0 {
		bad.Errorf("outbox after the final relay: %d pending, %d dead-lettered", st.Pending, st.DeadLettered)
	}

	// Every event projected exactly once.
	applied := c.applied()
	for id := range byID {
		if n := applied[id]; n != 1 {
			bad.Errorf("event %s applied %d times, want exactly once", id, n)
		}
	}
	for id := range applied {
		if _, ok := byID[id]; !ok {
			bad.Errorf("event %s applied but not in the log", id)
		}
	}

	if err := s.CheckInvariants(ctx); err != nil {
		t.Errorf("invariants: %v", err)
	}
	t.Logf("log: %d events in %d streams; %d acknowledged; %d deliveries (%d repeats); %d events projected",
		pos, len(versions), acked, len(deliveries), repeats, len(applied))
}

// mhFindings reports the first few violations of each kind and counts
// the rest, so that one broken guarantee does not bury the others.
type mhFindings struct {
	t      *testing.T
	counts map[string]int
}

// mhShown is how many violations of one kind are shown.
const mhShown = 10

// Errorf fails the test; the format names the kind of violation.
func (f *mhFindings) Errorf(format string, args ...any) {
	f.t.Helper()
	if f.counts == nil {
		f.counts = map[string]int{}
	}
	f.counts[format]++
	if f.counts[format] <= mhShown {
		f.t.Errorf(format, args...)
	}
}

func (f *mhFindings) summary() {
	for format, n := range f.counts {
		if n > mhShown {
			f.t.Errorf("... and %d more like %q", n-mhShown, format)
		}
	}
}

// applied reads the projection's table, over a connection of the test's
// own beside the store: the times each event id was applied.
func (c *mhCluster) applied() map[string]int64 {
	t := c.t
	t.Helper()
	ctx := context.Background()
	db, err := sql.Open("pgx", c.base)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.QueryContext(ctx, `SELECT event_id, applied FROM "`+c.schema+`".`+mhCountTable)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	applied := map[string]int64{}
	for rows.Next() {
		var id string
		var n int64
		if err := rows.Scan(&id, &n); err != nil {
			t.Fatal(err)
		}
		applied[id] = n
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return applied
}

// mhSink is a CloudEvents HTTP sink (binary mode) that records each
// delivery in the order it arrives.
type mhSink struct {
	srv *httptest.Server
	mu  sync.Mutex
	got []mhDelivery
}

type mhDelivery struct {
	id, tenant, stream string
	version, position  int64
}

func newMHSink(t *testing.T) *mhSink {
	k := &mhSink{}
	k.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		d := mhDelivery{id: r.Header.Get("ce-id"), tenant: r.Header.Get("ce-" + envelope.ExtTenant), stream: r.Header.Get("ce-subject")}
		var err1, err2 error
		d.version, err1 = strconv.ParseInt(r.Header.Get("ce-"+envelope.ExtStreamVersion), 10, 64)
		d.position, err2 = strconv.ParseInt(r.Header.Get("ce-"+envelope.ExtPosition), 10, 64)
		if d.id == "" || err1 != nil || err2 != nil {
			// A 4xx dead-letters the event: the outbox check reports it.
			http.Error(w, "want ce-id, ce-streamversion and ce-position", http.StatusBadRequest)
			return
		}
		k.mu.Lock()
		k.got = append(k.got, d)
		k.mu.Unlock()
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(k.srv.Close)
	return k
}

func (k *mhSink) all() []mhDelivery {
	k.mu.Lock()
	defer k.mu.Unlock()
	return append([]mhDelivery(nil), k.got...)
}

func (k *mhSink) count() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return len(k.got)
}
