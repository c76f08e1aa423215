package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
)

var servedURL = regexp.MustCompile(`^http://127\.0\.0\.1:[0-9]+$`)

// A real process: the first stdout line is the bound URL; it serves; a
// live reader sees an append made by another process (this one, through
// the CLI) on the same file; SIGTERM or SIGINT ends the live stream and
// the process exits 0.
func TestServeCommandSignals(t *testing.T) {
	t.Parallel()
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		db := newDB(t)
		cmd := exec.Command(os.Args[0], "-test.run=^TestMainProcess$")
		args, _ := json.Marshal([]string{"serve", "--db", db, "--addr", "127.0.0.1:0"})
		cmd.Env = append(os.Environ(), "EVENTLITE_MAIN_ARGS="+string(args))
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(stdout)
		if !sc.Scan() {
			_ = cmd.Wait()
			t.Fatalf("no first line; stderr:\n%s", stderr.String())
		}
		base := sc.Text()
		if !servedURL.MatchString(base) {
			t.Fatalf("first line %q", base)
		}
		go func() { _, _ = io.Copy(io.Discard, stdout) }()

		// A live reader of the log.
		req, _ := http.NewRequest("GET", base+"/v1/tenants/default/events?heartbeat=1s", nil)
		req.Header.Set("Accept", "text/event-stream")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		live := bufio.NewReader(res.Body)
		readUntil := func(prefix string) string {
			t.Helper()
			for {
				line, err := live.ReadString('\n')
				if err != nil {
					t.Fatalf("live stream ended before %q: %v", prefix, err)
				}
				if strings.HasPrefix(line, prefix) {
					return line
				}
			}
		}
		readUntil("event: caught-up")
		mustRun(t, "", "append", "order-1", "--type", "order.placed", "--db", db)
		readUntil("id: 1")
		if line := readUntil("data: "); !strings.Contains(line, `"subject":"order-1"`) {
			t.Errorf("live event %q", line)
		}
		readUntil(": hb")

		if err := cmd.Process.Signal(sig); err != nil {
			t.Fatal(err)
		}
		// The live stream ends.
		if _, err := io.Copy(io.Discard, live); err != nil {
			t.Logf("live stream: %v", err)
		}
		res.Body.Close()
		err = cmd.Wait()
		if code := cmd.ProcessState.ExitCode(); code != exitOK {
			t.Errorf("%s: exit %d (%v); stderr:\n%s", sig, code, err, stderr.String())
		}
		checkInvariants(t, db)
	}
}

// Without tokens only a loopback address is served: any other is exit 2,
// asking for a token, before the database is touched.
func TestServeRefusesNonLoopback(t *testing.T) {
	db := newDB(t)
	r := run(t, "", "serve", "--db", db, "--addr", "0.0.0.0:0")
	if r.code != exitUsage || !strings.Contains(r.stderr, "--token") || r.stdout != "" {
		t.Fatalf("exit %d, stdout %q, stderr:\n%s", r.code, r.stdout, r.stderr)
	}
	if _, err := os.Stat(db); err == nil {
		t.Error("the database was created")
	}
}

// With --tokens-file any address is served, and a token is needed.
func TestServeTokensFile(t *testing.T) {
	db := newDB(t)
	file := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(file, []byte("# ops\ns3cret=*\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	pr, pw := io.Pipe()
	done := make(chan int, 1)
	var stderr strings.Builder
	go func() {
		m := &Main{Stdout: pw, Stderr: &stderr}
		done <- m.Run(ctx, []string{"serve", "--db", db, "--addr", "0.0.0.0:0", "--tokens-file", file})
		pw.Close()
	}()
	first, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		cancel()
		t.Fatalf("first line: %v; exit %d; stderr:\n%s", err, <-done, stderr.String())
	}
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	_, port, _ := strings.Cut(strings.TrimPrefix(strings.TrimSpace(first), "http://"), "]:")
	if port == "" {
		_, port, _ = strings.Cut(strings.TrimPrefix(strings.TrimSpace(first), "http://"), ":")
	}
	url := "http://127.0.0.1:" + port + "/v1/tenants/default/events"
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusUnauthorized {
		t.Errorf("no token: %d", res.StatusCode)
	}
	req, _ := http.NewRequest("GET", url, nil)
	req.Header.Set("Authorization", "Bearer s3cret")
	res, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Errorf("token: %d", res.StatusCode)
	}
	cancel()
	if code := <-done; code != exitOK {
		t.Errorf("exit %d; stderr:\n%s", code, stderr.String())
	}
	if strings.Contains(stderr.String(), "s3cret") {
		t.Error("the token was logged")
	}
}

// A real process, a real SIGTERM: a client that sent its headers and then
// stalls its body (the server already asked for it with 100 Continue)
// does not hold the shutdown past --shutdown-grace: its connection is
// cut, a warning names how many were, and the process exits 0.
func TestServeShutdownGraceCutsStalled(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestMainProcess$")
	args, _ := json.Marshal([]string{"serve", "--db", db, "--addr", "127.0.0.1:0", "--shutdown-grace", "200ms"})
	cmd.Env = append(os.Environ(), "EVENTLITE_MAIN_ARGS="+string(args))
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stdout)
	if !sc.Scan() {
		_ = cmd.Wait()
		t.Fatalf("no first line; stderr:\n%s", stderr.String())
	}
	host := strings.TrimPrefix(sc.Text(), "http://")
	go func() { _, _ = io.Copy(io.Discard, stdout) }()

	conn, err := net.Dial("tcp", host)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, "POST /v1/tenants/default/streams/s/events HTTP/1.1\r\nHost: "+host+
		"\r\nContent-Type: application/cloudevents+json\r\nExpect: 100-continue\r\nContent-Length: 100\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	if line, err := br.ReadString('\n'); err != nil || !strings.HasPrefix(line, "HTTP/1.1 100") {
		t.Fatalf("no 100 Continue: %q %v", line, err)
	}
	if _, err := io.WriteString(conn, `{"specversion":"1.0",`); err != nil { // and then nothing
		t.Fatal(err)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != exitOK {
		t.Fatalf("exit %d (%v); stderr:\n%s", code, err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "[WARN]") || !strings.Contains(stderr.String(), "cut=1") {
		t.Fatalf("no warning naming one cut connection; stderr:\n%s", stderr.String())
	}
	checkInvariants(t, db)
}

// --allow-host is checked at parsing (a name, no port), and
// --shutdown-grace must be above 0: exit 2 before the database is opened.
func TestServeGuardFlags(t *testing.T) {
	db := newDB(t)
	for _, args := range [][]string{{"--allow-host", "events.internal:80"}, {"--allow-host", ""}, {"--shutdown-grace", "0s"}} {
		r := run(t, "", append([]string{"serve", "--db", db, "--addr", "127.0.0.1:0"}, args...)...)
		if r.code != exitUsage || r.stdout != "" || !strings.Contains(r.stderr, args[0]) {
			t.Errorf("%v: exit %d, stdout %q, stderr:\n%s", args, r.code, r.stdout, r.stderr)
		}
	}
	if _, err := os.Stat(db); err == nil {
		t.Error("the database was created")
	}
}

// The access log and the Host rule through the CLI: with --access-log,
// stdout carries the address line and then one JSON line per request;
// a rebound name is refused, an --allow-host name is served.
func TestServeAccessLogAndHosts(t *testing.T) {
	db := newDB(t)
	ctx, cancel := context.WithCancel(t.Context())
	pr, pw := io.Pipe()
	done := make(chan int, 1)
	var stderr strings.Builder
	go func() {
		m := &Main{Stdout: pw, Stderr: &stderr}
		done <- m.Run(ctx, []string{"serve", "--db", db, "--addr", "127.0.0.1:0", "--access-log", "--allow-host", "events.internal"})
		pw.Close()
	}()
	out := bufio.NewReader(pr)
	first, err := out.ReadString('\n')
	if err != nil {
		cancel()
		t.Fatalf("first line: %v; exit %d; stderr:\n%s", err, <-done, stderr.String())
	}
	base := strings.TrimSpace(first)
	lines := make(chan string, 16)
	go func() {
		defer close(lines)
		for {
			line, err := out.ReadString('\n')
			if err != nil {
				return
			}
			lines <- line
		}
	}()
	get := func(host string) int {
		t.Helper()
		req, _ := http.NewRequest("GET", base+"/v1/tenants/default/streams/secret-stream", nil)
		req.Host = host
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	for host, want := range map[string]int{"evil.example:1": 403, "events.internal:7777": 404} {
		if got := get(host); got != want {
			t.Errorf("Host %s: %d, want %d", host, got, want)
		}
		line := <-lines
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil || m["status"] != float64(want) ||
			m["route"] != "/v1/tenants/{tenant}/streams/{stream}" || strings.Contains(line, "secret-stream") {
			t.Errorf("access line %q: %v", line, err)
		}
	}
	cancel()
	if code := <-done; code != exitOK {
		t.Fatalf("exit %d; stderr:\n%s", code, stderr.String())
	}
}

// Two tokens with one secret, from --token and --tokens-file, exit 2
// naming both by place and tenant (never the secret), before the
// database is touched.
func TestServeRefusesDuplicateTokenSecrets(t *testing.T) {
	db := newDB(t)
	file := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(file, []byte("# ops\ns3cret=*\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// A cancelled context: a serve that accepted the tokens stops at once
	// (exit 0) instead of serving until the test times out.
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	r := runWith(t, ctx, nil, "", "serve", "--db", db, "--addr", "127.0.0.1:0", "--token", "s3cret=acme:ro", "--tokens-file", file)
	if r.code != exitUsage || !strings.Contains(r.stderr, "token 2") || !strings.Contains(r.stderr, "token 1") || strings.Contains(r.stderr, "s3cret") || r.stdout != "" {
		t.Fatalf("exit %d, stdout %q, stderr:\n%s", r.code, r.stdout, r.stderr)
	}
	if _, err := os.Stat(db); err == nil {
		t.Error("the database was created")
	}
}
