// Package natstest runs real NATS JetStream servers in-process for
// tests, and reads back what they stored.
//
// It needs no store, so tests of either engine use it.
package natstest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// ServerOptions configures RunJetStream. The zero value is a default
// server (max_payload 1 MiB, the default sync interval).
type ServerOptions struct {
	// MaxPayload is the server's max_payload in bytes; 0 means the default.
	MaxPayload int32
	// SyncAlways fsyncs every JetStream write before the ack.
	SyncAlways bool
}

// Server is an in-process NATS server with JetStream on a temporary
// directory, listening on 127.0.0.1. It keeps its port and its store
// across Shutdown and Start, like a broker that went down and came back.
type Server struct {
	tb   testing.TB
	opts server.Options
	s    *server.Server
}

// RunJetStream starts a server; it shuts down when the test ends.
func RunJetStream(tb testing.TB, o *ServerOptions) *Server {
	tb.Helper()
	var so ServerOptions
	if o != nil {
		so = *o
	}
	s := &Server{tb: tb, opts: server.Options{
		Host:       "127.0.0.1",
		Port:       -1,
		JetStream:  true,
		StoreDir:   tb.TempDir(),
		MaxPayload: so.MaxPayload,
		SyncAlways: so.SyncAlways,
		NoLog:      true,
		NoSigs:     true,
	}}
	s.Start()
	s.opts.Port = s.s.Addr().(*net.TCPAddr).Port
	tb.Cleanup(s.Shutdown)
	return s
}

// URL is the server's client URL.
func (s *Server) URL() string {
	return fmt.Sprintf("nats://127.0.0.1:%d", s.opts.Port)
}

// Start starts the server (again), on the same port with the same store.
func (s *Server) Start() {
	s.tb.Helper()
	if s.s != nil && s.s.Running() {
		return
	}
	opts := s.opts // NewServer may change its copy
	ns, err := server.NewServer(&opts)
	if err != nil {
		s.tb.Fatalf("nats server: %v", err)
	}
	ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		s.tb.Fatalf("nats server did not start")
	}
	s.s = ns
}

// Shutdown stops the server and waits until it has.
func (s *Server) Shutdown() {
	if s.s != nil {
		s.s.Shutdown()
		s.s.WaitForShutdown()
	}
}

// Restart stops the server and starts it again, with maxPayload as its
// max_payload when it is not 0.
func (s *Server) Restart(maxPayload int32) {
	s.tb.Helper()
	s.Shutdown()
	if maxPayload != 0 {
		s.opts.MaxPayload = maxPayload
	}
	s.Start()
}

// Connect opens a client connection, closed when the test ends.
func (s *Server) Connect(tb testing.TB) *nats.Conn {
	tb.Helper()
	nc, err := nats.Connect(s.URL())
	if err != nil {
		tb.Fatalf("connect to nats: %v", err)
	}
	tb.Cleanup(nc.Close)
	return nc
}

// Messages returns every message stored in a stream, in stream order.
func (s *Server) Messages(tb testing.TB, stream string) []jetstream.Msg {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	nc := s.Connect(tb)
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		tb.Fatal(err)
	}
	st, err := js.Stream(ctx, stream)
	if err != nil {
		tb.Fatalf("stream %s: %v", stream, err)
	}
	info, err := st.Info(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	n := int(info.State.Msgs)
	if n == 0 {
		return nil
	}
	c, err := st.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{})
	if err != nil {
		tb.Fatal(err)
	}
	var out []jetstream.Msg
	for len(out) < n {
		batch, err := c.Fetch(min(n-len(out), 1000), jetstream.FetchMaxWait(5*time.Second))
		if err != nil {
			tb.Fatalf("fetch: %v", err)
		}
		for m := range batch.Messages() {
			out = append(out, m)
		}
		if err := batch.Error(); err != nil && !errors.Is(err, nats.ErrTimeout) {
			tb.Fatalf("fetch: %v", err)
		}
	}
	return out
}
