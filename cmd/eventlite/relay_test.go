package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/eventlite/eventlite/natsjs/natstest"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/outbox"
)

// appendN appends n events to a stream through the CLI.
func appendN(t *testing.T, db, stream string, n int, extra ...string) {
	t.Helper()
	for i := range n {
		mustRun(t, "", append([]string{"append", stream, "--type", "t", "--data", fmt.Sprintf(`{"i":%d}`, i), "--db", db}, extra...)...)
	}
}

// streamVersions returns, per eventlite stream, the versions the JetStream
// stream holds, in stored order.
func streamVersions(t *testing.T, srv *natstest.Server, stream string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, m := range srv.Messages(t, stream) {
		h := m.Headers()
		out[h.Get("ce-subject")] = append(out[h.Get("ce-subject")], h.Get("ce-streamversion"))
	}
	return out
}

func TestRelayCommandUsage(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	for _, args := range [][]string{
		{"relay"},
		{"relay", "--to", "kafka://x"},
		{"relay", "--to", "stdout", "--create-stream"},
		{"relay", "--to", "nats://h:1", "--mode", "structured"},
		{"relay", "--to", "http://h:1", "--mode", "xml"},
		{"relay", "--to", "stdout", "--timeout", "1s"},
		{"relay", "--to", "nats://h:1?bogus=1"},
		{"relay", "--to", "stdout", "extra"},
	} {
		r := run(t, "", append(args, "--db", db)...)
		if r.code != exitUsage || !strings.Contains(r.stderr, "Usage: eventlite relay") {
			t.Errorf("%q: exit %d, stderr:\n%s", args, r.code, r.stderr)
		}
	}
	if _, err := os.Stat(db); err == nil {
		t.Errorf("a usage error created the database")
	}
}

func TestRelayCommandStdout(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	// A drain of a database that does not exist has nothing to do.
	if r := mustRun(t, "", "relay", "--to", "stdout", "--once", "--db", db); r.stdout != "" {
		t.Errorf("stdout: %q", r.stdout)
	}
	appendN(t, db, "s", 3)
	appendN(t, db, "other", 1, "--tenant", "acme")
	r := mustRun(t, "", "relay", "--to", "stdout", "--once", "--db", db)
	evs := decodeLines(t, r.stdout)
	if len(evs) != 4 || evs[0].Stream != "s" || evs[3].Tenant != "acme" {
		t.Fatalf("relayed %+v", evs)
	}
	if !strings.Contains(r.stderr, "outbox drained") {
		t.Errorf("stderr lacks the drain's log:\n%s", r.stderr)
	}
	// Consumed: a second drain prints nothing.
	if r := mustRun(t, "", "relay", "--to", "stdout", "--once", "--db", db); r.stdout != "" {
		t.Errorf("second drain printed %q", r.stdout)
	}
	checkInvariants(t, db)
}

func TestRelayCommandNATS(t *testing.T) {
	t.Parallel()
	srv := natstest.RunJetStream(t, nil)
	db := newDB(t)
	appendN(t, db, "order 1", 2)
	appendN(t, db, "s", 1, "--tenant", "acme")
	to := srv.URL() + "?stream=ORDERS&subject=shop.{tenant}.{stream}"
	// A missing stream is an error that says what to pass.
	r := run(t, "", "relay", "--to", to, "--once", "--db", db)
	if r.code != exitNotFound || !strings.Contains(r.stderr, "--create-stream") {
		t.Fatalf("missing stream: exit %d, stderr:\n%s", r.code, r.stderr)
	}
	mustRun(t, "", "relay", "--to", to, "--once", "--create-stream", "--db", db)
	msgs := srv.Messages(t, "ORDERS")
	if len(msgs) != 3 || msgs[0].Subject() != "shop.default.order_201" || msgs[2].Subject() != "shop.acme.s" {
		t.Fatalf("messages: %d, first subject %q", len(msgs), msgs[0].Subject())
	}
	if id := msgs[2].Headers().Get("Nats-Msg-Id"); !strings.HasPrefix(id, "acme:") {
		t.Errorf("message id %q", id)
	}
	checkInvariants(t, db)
}

func TestRelayCommandBrokerDown(t *testing.T) {
	t.Parallel()
	srv := natstest.RunJetStream(t, nil)
	url := srv.URL()
	srv.Shutdown()
	db := newDB(t)
	appendN(t, db, "s", 2)
	r := run(t, "", "relay", "--to", url, "--once", "--timeout", "3s", "--db", db)
	if r.code != exitIncomplete || !strings.Contains(r.stderr, "2 outbox row(s) still pending") || !strings.Contains(r.stderr, "unreachable") ||
		!strings.Contains(r.stderr, "--timeout 3s") {
		t.Fatalf("exit %d, stderr:\n%s", r.code, r.stderr)
	}
	// Nothing was counted against the events.
	s := openStore(t, db)
	es, _ := outbox.For(s).Entries(context.Background(), 0, 10)
	for _, e := range es {
		if e.Attempts != 0 {
			t.Errorf("row %d: %d attempts while the broker was down", e.Position, e.Attempts)
		}
	}
}

// openStore opens the store at db for the test's checks.
func openStore(t *testing.T, db string) *store.Store {
	t.Helper()
	s, err := store.Open(context.Background(), db, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

type dlqLine struct {
	Tenant      string `json:"tenant"`
	EventID     string `json:"event_id"`
	Stream      string `json:"stream"`
	Version     int64  `json:"version"`
	Position    string `json:"position"`
	Attempts    int    `json:"attempts"`
	Error       string `json:"error"`
	FirstFailed string `json:"first_failed"`
	LastFailed  string `json:"last_failed"`
}

func dlqList(t *testing.T, db string, extra ...string) []dlqLine {
	t.Helper()
	r := mustRun(t, "", append([]string{"dlq", "list", "--json", "--db", db}, extra...)...)
	var out []dlqLine
	for _, l := range lines(r.stdout) {
		var d dlqLine
		dec := json.NewDecoder(strings.NewReader(l))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&d); err != nil {
			t.Fatalf("dlq list --json line %q: %v", l, err)
		}
		out = append(out, d)
	}
	return out
}

// The poison event, end to end: larger than the broker's max_payload, it
// becomes a dead letter and parks its stream while others go out; the
// drain exits 6 naming the dead letter; after the limit is raised, dlq
// retry delivers it and the parked events, in order.
func TestDLQPoisonRetry(t *testing.T) {
	t.Parallel()
	srv := natstest.RunJetStream(t, &natstest.ServerOptions{MaxPayload: 64 << 10})
	db := newDB(t)
	mustRun(t, "", "append", "poisoned", "--type", "blob", "--data", `{"blob":"`+strings.Repeat("x", 100<<10)+`"}`, "--id", "poison-1", "--db", db)
	appendN(t, db, "poisoned", 2)
	appendN(t, db, "healthy", 3)
	r := run(t, "", "relay", "--to", srv.URL(), "--once", "--create-stream", "--db", db)
	if r.code != exitIncomplete || !strings.Contains(r.stderr, "2 outbox row(s) still pending") || !strings.Contains(r.stderr, "dlq list") {
		t.Fatalf("drain with a poison event: exit %d, stderr:\n%s", r.code, r.stderr)
	}
	if got := streamVersions(t, srv, "EVENTLITE"); len(got["poisoned"]) != 0 || strings.Join(got["healthy"], ",") != "1,2,3" {
		t.Fatalf("broker: %v", got)
	}
	dls := dlqList(t, db)
	if len(dls) != 1 || dls[0].EventID != "poison-1" || dls[0].Tenant != "default" || dls[0].Stream != "poisoned" || dls[0].Version != 1 ||
		dls[0].Position != "1" || dls[0].Attempts != 1 || dls[0].FirstFailed == "" || dls[0].LastFailed == "" {
		t.Fatalf("dlq list: %+v", dls)
	}
	for _, want := range []string{"65536", "max_payload"} {
		if !strings.Contains(dls[0].Error, want) {
			t.Errorf("dead letter error %q lacks %q", dls[0].Error, want)
		}
	}
	if text := mustRun(t, "", "dlq", "list", "--db", db).stdout; !strings.Contains(text, "poison-1") || !strings.Contains(text, "EVENT_ID") {
		t.Errorf("dlq list:\n%s", text)
	}
	// Another tenant has none; an unknown id exits 5.
	if dls := dlqList(t, db, "--tenant", "acme"); len(dls) != 0 {
		t.Errorf("tenant acme: %+v", dls)
	}
	for _, args := range [][]string{{"retry", "nope"}, {"discard", "nope"}, {"retry", "poison-1", "--tenant", "acme"}} {
		if r := run(t, "", append(append([]string{"dlq"}, args...), "--db", db)...); r.code != exitNotFound {
			t.Errorf("dlq %q: exit %d, stderr:\n%s", args, r.code, r.stderr)
		}
	}
	// Raise the limit; retry; drain.
	srv.Restart(8 << 20)
	if r := mustRun(t, "", "dlq", "retry", "poison-1", "--db", db); !strings.Contains(r.stdout, "re-queued poison-1") {
		t.Errorf("retry printed %q", r.stdout)
	}
	mustRun(t, "", "relay", "--to", srv.URL(), "--once", "--db", db)
	if got := streamVersions(t, srv, "EVENTLITE"); strings.Join(got["poisoned"], ",") != "1,2,3" {
		t.Fatalf("after the retry: %v", got)
	}
	if dls := dlqList(t, db); len(dls) != 0 {
		t.Errorf("dead letters left: %+v", dls)
	}
	checkInvariants(t, db)
}

func TestDLQDiscardAndRetryAll(t *testing.T) {
	t.Parallel()
	srv := natstest.RunJetStream(t, &natstest.ServerOptions{MaxPayload: 32 << 10})
	db := newDB(t)
	big := `{"blob":"` + strings.Repeat("x", 40<<10) + `"}`
	mustRun(t, "", "append", "a", "--type", "blob", "--data", big, "--id", "big-a", "--db", db)
	appendN(t, db, "a", 1)
	mustRun(t, "", "append", "b", "--type", "blob", "--data", big, "--id", "big-b", "--db", db)
	mustRun(t, "", "append", "c", "--type", "blob", "--data", big, "--id", "big-c", "--db", db)
	if r := run(t, "", "relay", "--to", srv.URL(), "--once", "--create-stream", "--db", db); r.code != exitIncomplete {
		t.Fatalf("exit %d, stderr:\n%s", r.code, r.stderr)
	}
	// Discard a's: never published, and a's next event goes out.
	r := mustRun(t, "", "dlq", "discard", "big-a", "--db", db)
	if !strings.Contains(r.stdout, "discarded big-a") || !strings.Contains(r.stderr, "discarded by an operator") {
		t.Errorf("discard: stdout %q, stderr %q", r.stdout, r.stderr)
	}
	mustRun(t, "", "relay", "--to", srv.URL(), "--once", "--db", db) // b and c stay dead: their streams have nothing behind them
	if got := streamVersions(t, srv, "EVENTLITE"); strings.Join(got["a"], ",") != "2" {
		t.Errorf("a after the discard: %v", got)
	}
	// Retry all, with the limit raised.
	srv.Restart(1 << 20)
	r = mustRun(t, "", "dlq", "retry", "--all", "--json", "--db", db)
	if n := len(lines(r.stdout)); n != 2 {
		t.Errorf("retry --all re-queued %d:\n%s", n, r.stdout)
	}
	mustRun(t, "", "relay", "--to", srv.URL(), "--once", "--db", db)
	got := streamVersions(t, srv, "EVENTLITE")
	if len(got["b"]) != 1 || len(got["c"]) != 1 {
		t.Errorf("after retry --all: %v", got)
	}
	for _, args := range [][]string{{"dlq"}, {"dlq", "purge"}, {"dlq", "retry"}, {"dlq", "retry", "x", "--all"}, {"dlq", "list", "x"}, {"dlq", "discard"}, {"dlq", "list", "--all"}} {
		if r := run(t, "", append(args, "--db", db)...); r.code != exitUsage {
			t.Errorf("%q: exit %d", args, r.code)
		}
	}
	checkInvariants(t, db)
}

// Interrupted in-process: running, it exits 0; draining, 6.
func TestRelayCommandInterrupted(t *testing.T) {
	t.Parallel()
	srv := natstest.RunJetStream(t, nil)
	url := srv.URL()
	srv.Shutdown()
	db := newDB(t)
	appendN(t, db, "s", 1)
	for _, tt := range []struct {
		args []string
		want int
	}{
		{[]string{"relay", "--to", url}, exitOK},
		{[]string{"relay", "--to", url, "--once"}, exitIncomplete},
	} {
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan result, 1)
		go func() { done <- runWith(t, ctx, nil, "", append(tt.args, "--db", db)...) }()
		// Let it start and back off against the down broker.
		s := openStore(t, db)
		deadline := time.Now().Add(10 * time.Second)
		for {
			ls, _ := s.Leases().List(context.Background())
			if len(ls) == 1 && ls[0].Owner != "" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the relay never took its lease")
			}
			time.Sleep(5 * time.Millisecond) // polling another connection's commit
		}
		start := time.Now()
		cancel()
		r := <-done
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("%q took %s to stop", tt.args, d)
		}
		if r.code != tt.want {
			t.Errorf("%q: exit %d, want %d; stderr:\n%s", tt.args, r.code, tt.want, r.stderr)
		}
		if ls, _ := s.Leases().List(context.Background()); len(ls) != 1 || ls[0].Owner != "" {
			t.Errorf("lease after the stop: %+v", ls)
		}
	}
}

// TestMainProcess is the child of TestRelayCommandSignals: the real main,
// with its signal handling.
func TestMainProcess(t *testing.T) {
	if os.Getenv("EVENTLITE_MAIN_ARGS") == "" {
		t.Skip("runs only as a child process")
	}
	var args []string
	if err := json.Unmarshal([]byte(os.Getenv("EVENTLITE_MAIN_ARGS")), &args); err != nil {
		t.Fatal(err)
	}
	os.Args = append([]string{"eventlite"}, args...)
	main()
}

// A real process, real signals: SIGTERM and SIGINT stop it within 2 s,
// exit 0 (6 for --once), with the lease released.
func TestRelayCommandSignals(t *testing.T) {
	t.Parallel()
	srv := natstest.RunJetStream(t, nil)
	url := srv.URL()
	srv.Shutdown()
	db := newDB(t)
	appendN(t, db, "s", 1)
	for _, tt := range []struct {
		sig  syscall.Signal
		args []string
		want int
	}{
		{syscall.SIGTERM, []string{"relay", "--to", url}, exitOK},
		{syscall.SIGINT, []string{"relay", "--to", url}, exitOK},
		{syscall.SIGINT, []string{"relay", "--to", url, "--once", "--timeout", "1m"}, exitIncomplete},
	} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestMainProcess$")
		args, _ := json.Marshal(append(tt.args, "--db", db))
		cmd.Env = append(os.Environ(), "EVENTLITE_MAIN_ARGS="+string(args))
		stderr, err := cmd.StderrPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Wait until it backs off against the down broker.
		sc := bufio.NewScanner(stderr)
		var log strings.Builder
		for sc.Scan() {
			log.WriteString(sc.Text() + "\n")
			if strings.Contains(sc.Text(), "backing off") {
				break
			}
		}
		start := time.Now()
		if err := cmd.Process.Signal(tt.sig); err != nil {
			t.Fatal(err)
		}
		go func() {
			for sc.Scan() {
			}
		}()
		err = cmd.Wait()
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("%s: took %s to stop", tt.sig, d)
		}
		if code := cmd.ProcessState.ExitCode(); code != tt.want {
			t.Errorf("%s %q: exit %d (%v), want %d; stderr:\n%s", tt.sig, tt.args, code, err, tt.want, log.String())
		}
		s := openStore(t, db)
		if ls, _ := s.Leases().List(context.Background()); len(ls) != 1 || ls[0].Owner != "" {
			t.Errorf("lease after %s: %+v", tt.sig, ls)
		}
		s.Close()
	}
}
