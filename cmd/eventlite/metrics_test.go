package main

import (
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/eventlite/eventlite/serve"
)

// serveMetrics returns the address it bound; an address in use is an
// error; after Close nothing listens.
func TestServeMetrics(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	ms, err := serveMetrics("127.0.0.1:0", nil, reg, hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	addr := ms.Addr().(*net.TCPAddr)
	if addr.Port == 0 || !addr.IP.IsLoopback() {
		t.Fatalf("bound %v", addr)
	}
	resp, err := http.Get("http://" + addr.String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET /metrics: %s", resp.Status)
	}
	if _, err := serveMetrics(addr.String(), nil, reg, hclog.NewNullLogger()); err == nil || !strings.Contains(err.Error(), "--metrics") {
		t.Errorf("second listen on %s: %v", addr, err)
	}
	if err := ms.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := net.Dial("tcp", addr.String()); err == nil {
		t.Errorf("still listening on %s after Close", addr)
	}
}

func TestRelayMetricsFlag(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	for _, v := range []string{"9464", "localhost", "127.0.0.1:99999", "127.0.0.1:http", ":"} {
		r := run(t, "", "relay", "--to", "stdout", "--metrics", v, "--db", db)
		if r.code != exitUsage || !strings.Contains(r.stderr, "--metrics") || !strings.Contains(r.stderr, "Usage: eventlite relay") {
			t.Errorf("--metrics %q: exit %d, stderr:\n%s", v, r.code, r.stderr)
		}
	}
	appendN(t, db, "s", 2)
	// An address in use: exit 1 before anything is relayed.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	r := run(t, "", "relay", "--to", "stdout", "--once", "--metrics", ln.Addr().String(), "--db", db)
	if r.code != exitInternal || !strings.Contains(r.stderr, "--metrics") || r.stdout != "" {
		t.Errorf("address in use: exit %d, stdout %q, stderr:\n%s", r.code, r.stdout, r.stderr)
	}
	// A free port: served while the drain runs, and shut down after it.
	r = mustRun(t, "", "relay", "--to", "stdout", "--once", "--metrics", "127.0.0.1:0", "--db", db)
	if len(lines(r.stdout)) != 2 || !strings.Contains(r.stderr, "serving metrics") {
		t.Errorf("stdout %q, stderr:\n%s", r.stdout, r.stderr)
	}
}

// The metrics server keeps the Host rule of serve: a rebound name gets
// 403 host-not-allowed (the same problem), an IP address or an
// --allow-host name is served.
func TestServeMetricsHostRule(t *testing.T) {
	t.Parallel()
	ms, err := serveMetrics("127.0.0.1:0", []string{"metrics.internal"}, prometheus.NewRegistry(), hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer ms.Close()
	port := strconv.Itoa(ms.Addr().(*net.TCPAddr).Port)
	for host, want := range map[string]int{"evil.example:" + port: 403, "127.0.0.1:" + port: 200, "localhost": 200, "Metrics.Internal:9464": 200} {
		req, _ := http.NewRequest("GET", "http://"+ms.Addr().String()+"/metrics", nil)
		req.Host = host
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != want {
			t.Errorf("Host %s: %d, want %d", host, res.StatusCode, want)
		}
		if want == 403 && (res.Header.Get("Content-Type") != "application/problem+json" || !strings.Contains(string(body), serve.ProblemTypeBase+"host-not-allowed")) {
			t.Errorf("refusal: %s %s", res.Header.Get("Content-Type"), body)
		}
	}
	if _, err := serveMetrics("127.0.0.1:0", []string{"a:1"}, prometheus.NewRegistry(), hclog.NewNullLogger()); err == nil || !strings.Contains(err.Error(), "--allow-host") {
		t.Errorf("a name with a port: %v", err)
	}
}
