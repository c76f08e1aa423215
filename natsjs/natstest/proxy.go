package natstest

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
)

// Proxy is a TCP proxy on 127.0.0.1 in front of a NATS server that can
// drop the replies the server sends to clients' inboxes: JetStream publish
// acks lost on the way back, after the server stored the messages. It
// parses the server's protocol (MSG and HMSG frames) to do so.
type Proxy struct {
	tb     testing.TB
	target string
	ln     net.Listener
	drop   atomic.Int64 // acks still to drop; -1 drops all
	// Dropped counts the replies dropped so far.
	Dropped atomic.Int64

	mu    sync.Mutex
	conns []net.Conn
	wg    sync.WaitGroup
}

// NewProxy listens on 127.0.0.1 and forwards to target (host:port). It
// closes when the test ends.
func NewProxy(tb testing.TB, target string) *Proxy {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	p := &Proxy{tb: tb, target: target, ln: ln}
	p.wg.Add(1)
	go p.accept()
	tb.Cleanup(p.Close)
	return p
}

// URL is the proxy's NATS URL.
func (p *Proxy) URL() string { return "nats://" + p.ln.Addr().String() }

// DropAcks drops the next n replies to "_INBOX." subjects (n < 0: all
// of them, until DropAcks(0)).
func (p *Proxy) DropAcks(n int) { p.drop.Store(int64(n)) }

// Close stops the proxy and cuts its connections.
func (p *Proxy) Close() {
	p.ln.Close()
	p.mu.Lock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
	p.mu.Unlock()
	p.wg.Wait()
}

func (p *Proxy) track(c net.Conn) {
	p.mu.Lock()
	p.conns = append(p.conns, c)
	p.mu.Unlock()
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return
		}
		server, err := net.Dial("tcp", p.target)
		if err != nil {
			client.Close()
			continue
		}
		p.track(client)
		p.track(server)
		p.wg.Add(2)
		go func() {
			defer p.wg.Done()
			_, _ = io.Copy(server, client)
			server.Close()
		}()
		go func() {
			defer p.wg.Done()
			p.fromServer(client, server)
			client.Close()
		}()
	}
}

// fromServer copies the server's protocol to the client frame by frame,
// leaving out the inbox replies it is told to drop.
func (p *Proxy) fromServer(client, server net.Conn) {
	r := bufio.NewReaderSize(server, 64<<10)
	w := bufio.NewWriterSize(client, 64<<10)
	for {
		line, err := r.ReadSlice('\n')
		if err != nil {
			return
		}
		line = bytes.Clone(line)
		var payload []byte
		fields := bytes.Fields(line)
		if len(fields) > 0 && (bytes.Equal(fields[0], []byte("MSG")) || bytes.Equal(fields[0], []byte("HMSG"))) {
			n, err := strconv.Atoi(string(fields[len(fields)-1]))
			if err != nil {
				return
			}
			payload = make([]byte, n+2) // and its CRLF
			if _, err := io.ReadFull(r, payload); err != nil {
				return
			}
			if len(fields) > 1 && bytes.HasPrefix(fields[1], []byte("_INBOX.")) && p.take() {
				p.Dropped.Add(1)
				continue
			}
		}
		if _, err := w.Write(line); err != nil {
			return
		}
		if _, err := w.Write(payload); err != nil {
			return
		}
		if r.Buffered() == 0 {
			if err := w.Flush(); err != nil {
				return
			}
		}
	}
}

// take reports whether to drop this reply, counting it down.
func (p *Proxy) take() bool {
	for {
		n := p.drop.Load()
		switch {
		case n == 0:
			return false
		case n < 0:
			return true
		case p.drop.CompareAndSwap(n, n-1):
			return true
		}
	}
}
