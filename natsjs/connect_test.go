package natsjs_test

import (
	"bytes"
	"context"
	"net"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/eventlite/eventlite/natsjs"
	"github.com/eventlite/eventlite/publish"
)

// closedURL returns a nats:// URL on 127.0.0.1 where nothing listens.
func closedURL(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return "nats://" + addr
}

// TestNewNATSUnreachable: a server that does not answer is logged at warn
// level with the URL and the cause; by default NewPublisher still returns a
// publisher that retries (Publish: Unreachable); with RequireConnect it
// fails at once, Unreachable, naming the URL and what to check.
func TestNewNATSUnreachable(t *testing.T) {
	ctx := context.Background()
	url := closedURL(t)
	logger := func(buf *bytes.Buffer) hclog.Logger {
		return hclog.New(&hclog.LoggerOptions{Output: buf, Level: hclog.Warn, DisableTime: true})
	}

	var logs bytes.Buffer
	p, err := natsjs.NewPublisher(ctx, natsjs.Options{URL: url, Logger: logger(&logs)})
	if err != nil {
		t.Fatalf("default: %v, want a publisher that retries", err)
	}
	res := p.Publish(ctx, publish.Messages(newEvent(t, "order.placed", map[string]int{"n": 1})))
	if publish.ClassOf(res[0].Err) != publish.Unreachable {
		t.Errorf("publish while unreachable: %v, want Unreachable", res[0].Err)
	}
	if err := p.Close(); err != nil {
		t.Error(err)
	}
	want := `[WARN]  nats: NATS does not answer yet; retrying in the background (publishes fail Unreachable until it does): url=` + url + ` error=`
	if !strings.Contains(logs.String(), want) || !strings.Contains(logs.String(), "connection refused") {
		t.Errorf("default: log\n%s\nwant a line with %q and the cause", &logs, want)
	}

	logs.Reset()
	p, err = natsjs.NewPublisher(ctx, natsjs.Options{URL: url, RequireConnect: true, Logger: logger(&logs)})
	if err == nil {
		_ = p.Close()
		t.Fatal("RequireConnect: no error")
	}
	prefix := "connect to NATS at " + url + ": "
	suffix := ": check the URL and that the server runs (natsjs.Options.RequireConnect)"
	if msg := err.Error(); !strings.HasPrefix(msg, prefix) || !strings.HasSuffix(msg, suffix) || !strings.Contains(msg, "connection refused") {
		t.Errorf("RequireConnect: %q, want %q...connection refused...%q", msg, prefix, suffix)
	}
	if publish.ClassOf(err) != publish.Unreachable {
		t.Errorf("RequireConnect: class %v, want Unreachable", publish.ClassOf(err))
	}
	if want := `[WARN]  nats: NATS does not answer: url=` + url; !strings.Contains(logs.String(), want) {
		t.Errorf("RequireConnect: log\n%s\nwant %q", &logs, want)
	}
}
