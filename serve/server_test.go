package serve_test

import (
	"bufio"
	"context"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/eventlite/eventlite/serve"
	"github.com/eventlite/eventlite/store/storetest"
)

// syncBuffer is a log output safe to read while the server writes it.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (sb *syncBuffer) Write(p []byte) (int, error) {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	return sb.b.Write(p)
}

func (sb *syncBuffer) String() string {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	return sb.b.String()
}

// Handler.Serve closes a keep-alive connection idle for IdleTimeout; at
// shutdown it cuts a stalled upload after ShutdownGrace, warns with the
// count, and returns nil.
func TestServeIdleAndShutdown(t *testing.T) {
	s := storetest.MustOpen(t, nil)
	var logs syncBuffer
	h, err := serve.New(s, &serve.Options{IdleTimeout: 50 * time.Millisecond, ShutdownGrace: 100 * time.Millisecond,
		Logger: hclog.New(&hclog.LoggerOptions{Level: hclog.Warn, Output: &logs})})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.Serve(ctx, ln) }()
	defer func() {
		cancel()
		<-done
	}()
	addr := ln.Addr().String()

	// Idle: one request, then nothing; the server closes the connection.
	idle, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	if _, err := io.WriteString(idle, "GET /healthz HTTP/1.1\r\nHost: "+addr+"\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(idle)
	readResponse(t, br)
	if n, err := br.ReadByte(); err != io.EOF {
		t.Fatalf("the idle connection gave %v, %v; want EOF", n, err)
	}

	// Stalled: the server asked for the body (100 Continue), none comes.
	stalled, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer stalled.Close()
	if _, err := io.WriteString(stalled, "POST "+streamEvents("default", "s")+" HTTP/1.1\r\nHost: "+addr+
		"\r\nContent-Type: "+ctStructured+"\r\nExpect: 100-continue\r\nContent-Length: 100\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	if line, err := bufio.NewReader(stalled).ReadString('\n'); err != nil || !strings.HasPrefix(line, "HTTP/1.1 100") {
		t.Fatalf("no 100 Continue: %q %v", line, err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Serve: %v", err)
	}
	done <- nil // for the deferred wait
	if l := logs.String(); !strings.Contains(l, "[WARN]") || !strings.Contains(l, "cut=1") {
		t.Fatalf("no warning naming one cut connection:\n%s", l)
	}
}
