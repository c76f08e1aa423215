package publish_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/eventlite/eventlite/natsjs"
	"github.com/eventlite/eventlite/natsjs/natstest"
	"github.com/eventlite/eventlite/publish"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/outbox"
	"github.com/eventlite/eventlite/store/storetest"
)

// The tests here run relays in child processes: this test binary again,
// running TestRelayChildProcess. A child prints what it does on stdout,
// one line each:
//
//	READY                                    SIGTERM is handled from here on
//	LEASE <token>                            took (token) or let go of (0) the lease
//	BATCH <token> <published> <dups> <err>   settled a batch
//	GATED                                    published a batch and waits on stdin before marking it
//
// and logs on stderr.

// TestRelayChildProcess is the child's side; it does nothing in a normal
// run.
func TestRelayChildProcess(t *testing.T) {
	if os.Getenv("EVENTLITE_RELAY_CHILD") == "" {
		t.Skip("runs only as a child process of the relay process tests")
	}
	env := func(k string) int {
		n, _ := strconv.Atoi(os.Getenv(k))
		return n
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	fmt.Println("READY") // SIGTERM now stops it cleanly
	log := hclog.New(&hclog.LoggerOptions{Name: "child", Level: hclog.Info, Output: os.Stderr})
	s, err := store.Open(ctx, os.Getenv("EVENTLITE_CHILD_DB"), &store.Options{Synchronous: "NORMAL", Logger: log})
	if err != nil {
		if ctx.Err() != nil {
			return // stopped while opening: a clean stop, as in a service
		}
		t.Fatal(err)
	}
	defer s.Close()
	nats, err := natsjs.NewPublisher(ctx, natsjs.Options{URL: os.Getenv("EVENTLITE_CHILD_NATS"), CreateStream: true, Logger: log})
	if err != nil {
		if ctx.Err() != nil {
			return
		}
		t.Fatal(err)
	}
	defer nats.Close()
	var pub publish.Publisher = nats
	if at := env("EVENTLITE_CHILD_GATE"); at > 0 {
		g := newGated(nats, at)
		pub = g
		go func() {
			<-g.entered
			fmt.Println("GATED")
			_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
			close(g.release)
		}()
	}
	var out sync.Mutex
	say := func(format string, args ...any) {
		out.Lock()
		defer out.Unlock()
		fmt.Printf(format+"\n", args...)
	}
	r, err := publish.New(publish.Options{
		Store:      s,
		Publisher:  pub,
		Owner:      os.Getenv("EVENTLITE_CHILD_OWNER"),
		LeaseTTL:   time.Duration(env("EVENTLITE_CHILD_TTL_MS")) * time.Millisecond,
		RenewEvery: time.Duration(env("EVENTLITE_CHILD_RENEW_MS")) * time.Millisecond,
		BatchSize:  env("EVENTLITE_CHILD_BATCH"),
		Logger:     log,
		OnLease:    func(token int64) { say("LEASE %d", token) },
		OnBatch: func(b publish.BatchReport) {
			e := "-"
			if b.Err != nil {
				e = strings.ReplaceAll(b.Err.Error(), " ", "_")
			}
			say("BATCH %d %d %d %s", b.Token, b.Published, b.Duplicates, e)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Run(ctx); err != nil {
		t.Fatal(err)
	}
}

// child is a relay process.
type child struct {
	t      *testing.T
	name   string
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	mu     sync.Mutex
	lines  []string
	stderr bytes.Buffer
	more   chan struct{}
	exited chan struct{}
}

type childConfig struct {
	db, nats, owner string
	ttl, renew      time.Duration
	batch, gate     int
}

func startChild(t *testing.T, cfg childConfig) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestRelayChildProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(),
		"EVENTLITE_RELAY_CHILD=1",
		"EVENTLITE_CHILD_DB="+cfg.db,
		"EVENTLITE_CHILD_NATS="+cfg.nats,
		"EVENTLITE_CHILD_OWNER="+cfg.owner,
		fmt.Sprint("EVENTLITE_CHILD_TTL_MS=", cfg.ttl.Milliseconds()),
		fmt.Sprint("EVENTLITE_CHILD_RENEW_MS=", cfg.renew.Milliseconds()),
		fmt.Sprint("EVENTLITE_CHILD_BATCH=", cfg.batch),
		fmt.Sprint("EVENTLITE_CHILD_GATE=", cfg.gate),
	)
	c := &child{t: t, name: cfg.owner, cmd: cmd, more: make(chan struct{}, 1), exited: make(chan struct{})}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if c.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = &lockedWriter{mu: &c.mu, w: &c.stderr}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			c.mu.Lock()
			c.lines = append(c.lines, sc.Text())
			c.mu.Unlock()
			c.poke()
		}
		_ = cmd.Wait()
		close(c.exited)
		c.poke()
	}()
	t.Cleanup(func() {
		c.kill()
		if t.Failed() {
			t.Logf("%s stdout:\n%s\n%s stderr:\n%s", c.name, strings.Join(c.output(), "\n"), c.name, c.errors())
		}
	})
	return c
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (w *lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.w.Write(p)
}

func (c *child) poke() {
	select {
	case c.more <- struct{}{}:
	default:
	}
}

func (c *child) output() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.lines...)
}

func (c *child) errors() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stderr.String()
}

// waitFor waits until cond holds over the child's output lines, waking on
// each new line.
func (c *child) waitFor(what string, within time.Duration, cond func([]string) bool) {
	c.t.Helper()
	timeout := time.After(within)
	for !cond(c.output()) {
		select {
		case <-c.more:
		case <-c.exited:
			if !cond(c.output()) {
				c.t.Fatalf("%s exited before %s", c.name, what)
			}
		case <-timeout:
			c.t.Fatalf("timed out after %s waiting for %s to %s", within, c.name, what)
		}
	}
}

// leases lists the tokens the child took.
func (c *child) leases() []int64 {
	var out []int64
	for _, l := range c.output() {
		var tok int64
		if _, err := fmt.Sscanf(l, "LEASE %d", &tok); err == nil && tok > 0 {
			out = append(out, tok)
		}
	}
	return out
}

type childBatch struct {
	token           int64
	published, dups int
	err             string
}

func (c *child) batches() []childBatch {
	var out []childBatch
	for _, l := range c.output() {
		var b childBatch
		if _, err := fmt.Sscanf(l, "BATCH %d %d %d %s", &b.token, &b.published, &b.dups, &b.err); err == nil {
			out = append(out, b)
		}
	}
	return out
}

func (c *child) signal(sig syscall.Signal) {
	c.t.Helper()
	if err := c.cmd.Process.Signal(sig); err != nil {
		c.t.Fatalf("signal %s to %s: %v", sig, c.name, err)
	}
}

// kill ends the child with SIGKILL (a no-op once it exited) and waits.
func (c *child) kill() {
	_ = c.cmd.Process.Signal(syscall.SIGKILL)
	<-c.exited
}

// stop asks the child to stop with SIGTERM and waits for it.
func (c *child) stop() {
	c.t.Helper()
	// A SIGTERM before the child handles it would kill it, not stop it.
	c.waitFor("its signal handler", 30*time.Second, hasLine("READY"))
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.exited:
	case <-time.After(10 * time.Second):
		c.t.Errorf("%s did not stop on SIGTERM", c.name)
		c.kill()
	}
	if code := c.cmd.ProcessState.ExitCode(); code != 0 {
		c.t.Errorf("%s exited %d after SIGTERM", c.name, code)
	}
}

// drained waits until the parent sees every outbox row published.
func drained(t *testing.T, s *store.Store, within time.Duration) {
	t.Helper()
	eventually(t, "the outbox to drain", within, func() bool {
		st, err := outbox.For(s).Stats(context.Background())
		return err == nil && st.Pending == 0
	})
}

// A relay killed with SIGKILL between publishing a batch and marking it,
// then restarted: the rest goes out, nothing is lost, and the repeats are
// redeliveries of the same ids, which the broker dedupes.
func TestRelayProcessKilledMidBatch(t *testing.T) {
	rnd := rand.New(rand.NewPCG(seed(t), 0))
	srv := natstest.RunJetStream(t, nil)
	db := t.TempDir() + "/events.db"
	s := storetest.MustOpenPath(t, db, nil)
	for i := range 4 {
		appendEvents(t, s, "default", fmt.Sprint("s", i), 30)
	}
	const batch = 30
	gate := 1 + rnd.IntN(3) // the batch to die in
	cfg := childConfig{db: db, nats: srv.URL(), owner: "first", ttl: time.Second, renew: 300 * time.Millisecond, batch: batch, gate: gate}
	c := startChild(t, cfg)
	c.waitFor("publish batch "+fmt.Sprint(gate), 30*time.Second, hasLine("GATED"))
	c.kill()
	marked := 0
	for _, o := range outboxEntries(t, s) {
		if !o.PublishedAt.IsZero() {
			marked++
		}
	}
	// The batches before were marked, but for the last one's marks, which
	// are written while the next batch is published.
	if marked%batch != 0 || marked > (gate-1)*batch || marked < (gate-2)*batch {
		t.Fatalf("%d rows marked before the kill in batch %d, want %d (or one batch fewer)", marked, gate, (gate-1)*batch)
	}
	if n := len(srv.Messages(t, natsjs.DefaultStream)); n != gate*batch {
		t.Fatalf("broker holds %d messages, want %d", n, gate*batch)
	}
	// Restarted, it waits out the dead one's lease, then goes on.
	cfg.owner, cfg.gate = "second", 0
	c2 := startChild(t, cfg)
	drained(t, s, 30*time.Second)
	c2.stop()
	checkBroker(t, srv, s)
	pub, dups := 0, 0
	for _, b := range c2.batches() {
		pub += b.published
		dups += b.dups
	}
	if pub != 120-marked || dups != gate*batch-marked {
		t.Errorf("restarted relay published %d (%d duplicates), want %d (%d)", pub, dups, 120-marked, gate*batch-marked)
	}
	if testing.Short() {
		return
	}
	// Then kills at random moments while events keep coming.
	for round := range 3 {
		cfg.owner = fmt.Sprint("random-", round)
		c := startChild(t, cfg)
		for range 20 {
			appendEvents(t, s, "default", fmt.Sprint("r", rnd.IntN(5)), 1+rnd.IntN(5))
		}
		time.Sleep(time.Duration(rnd.IntN(300)) * time.Millisecond) // a random moment to die
		c.kill()
	}
	cfg.owner = "last"
	c3 := startChild(t, cfg)
	drained(t, s, 30*time.Second)
	c3.stop()
	checkBroker(t, srv, s)
}

func hasLine(prefix string) func([]string) bool {
	return func(lines []string) bool {
		for _, l := range lines {
			if strings.HasPrefix(l, prefix) {
				return true
			}
		}
		return false
	}
}

// Two relay processes at once: one holds the lease and writes, the other
// stands by and writes nothing; when the holder dies, the other takes
// over with a higher token.
func TestTwoRelayProcesses(t *testing.T) {
	srv := natstest.RunJetStream(t, nil)
	db := t.TempDir() + "/events.db"
	s := storetest.MustOpenPath(t, db, nil)
	cfg := childConfig{db: db, nats: srv.URL(), ttl: time.Second, renew: 300 * time.Millisecond, batch: 20}
	cfg.owner = "a"
	a := startChild(t, cfg)
	cfg.owner = "b"
	b := startChild(t, cfg)
	for round := range 3 {
		appendEvents(t, s, "default", fmt.Sprint("s", round), 25)
		appendEvents(t, s, "acme", "s", 5)
		drained(t, s, 30*time.Second)
	}
	holder, standby := a, b
	if len(a.leases()) == 0 {
		holder, standby = b, a
	}
	if len(holder.leases()) != 1 || len(standby.leases()) != 0 || len(standby.batches()) != 0 {
		t.Fatalf("holder %s leases %v; standby %s leases %v, %d batches", holder.name, holder.leases(), standby.name, standby.leases(), len(standby.batches()))
	}
	first := holder.leases()[0]
	holder.kill()
	appendEvents(t, s, "default", "after", 30)
	drained(t, s, 30*time.Second)
	standby.stop()
	took := standby.leases()
	if len(took) != 1 || took[0] != first+1 {
		t.Fatalf("the standby took tokens %v, want [%d]", took, first+1)
	}
	// Every batch was settled under its process's own token, and every
	// row carries the token of the process that published it.
	for _, c := range []*child{holder, standby} {
		for _, bt := range c.batches() {
			if bt.token != c.leases()[0] || bt.err != "-" {
				t.Errorf("%s settled a batch under token %d (err %s), holding %v", c.name, bt.token, bt.err, c.leases())
			}
		}
	}
	for _, o := range outboxEntries(t, s) {
		want := first
		if o.Stream == "after" {
			want = first + 1
		}
		if o.PublishedToken != want {
			t.Errorf("row %d (%s) marked under token %d, want %d", o.Position, o.Stream, o.PublishedToken, want)
		}
	}
	checkBroker(t, srv, s)
}

// A holder paused (SIGSTOP) between publishing a batch and marking it,
// past its lease, while another relay takes over and drains; resumed
// (SIGCONT), it finishes its batch at the broker, but the store accepts
// none of its writes, and the broker holds one copy per event id.
func TestPausedRelayProcessLosesItsWrites(t *testing.T) {
	srv := natstest.RunJetStream(t, nil)
	db := t.TempDir() + "/events.db"
	s := storetest.MustOpenPath(t, db, nil)
	appendEvents(t, s, "default", "a", 20)
	appendEvents(t, s, "acme", "b", 20)
	cfg := childConfig{db: db, nats: srv.URL(), ttl: time.Second, renew: 300 * time.Millisecond, batch: 100}
	cfg.owner, cfg.gate = "paused", 1
	p := startChild(t, cfg)
	p.waitFor("publish its batch", 30*time.Second, hasLine("GATED"))
	p.signal(syscall.SIGSTOP)
	pausedToken := p.leases()[0]
	cfg.owner, cfg.gate = "successor", 0
	succ := startChild(t, cfg)
	drained(t, s, 30*time.Second)
	if got := succ.leases(); len(got) != 1 || got[0] != pausedToken+1 {
		t.Fatalf("successor's tokens %v, want [%d]", got, pausedToken+1)
	}
	// Wake the paused one and let it go on with its batch.
	p.signal(syscall.SIGCONT)
	if _, err := io.WriteString(p.stdin, "go\n"); err != nil {
		t.Fatal(err)
	}
	p.waitFor("let go of its lease", 30*time.Second, hasLine("LEASE 0"))
	p.stop()
	succ.stop()
	if !strings.Contains(p.errors(), "lost the relay lease") {
		t.Errorf("the paused relay did not log that it lost its lease")
	}
	t.Logf("the paused relay said: %q", p.output())
	// Its lease was found lost either by its renewal or by the fenced
	// marks of its batch (refused as stale), or its batch was abandoned
	// when the renewal found the loss: in no case did a write land.
	for _, bt := range p.batches() {
		if bt.published != 0 || (!strings.Contains(bt.err, "stale") && !strings.Contains(bt.err, "context_canceled")) {
			t.Errorf("the paused relay settled a batch: %+v", bt)
		}
	}
	for _, o := range outboxEntries(t, s) {
		if o.PublishedToken != pausedToken+1 {
			t.Errorf("row %d marked under token %d, want the successor's %d", o.Position, o.PublishedToken, pausedToken+1)
		}
	}
	checkBroker(t, srv, s)
}
