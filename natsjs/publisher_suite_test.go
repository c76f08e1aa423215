package natsjs_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/natsjs"
	"github.com/eventlite/eventlite/natsjs/natstest"
	"github.com/eventlite/eventlite/publish"
	"github.com/eventlite/eventlite/publish/publishtest"
)

// TestPublisherSuite runs publish's exported publisher suite on the NATS
// publisher, against a real JetStream server behind a proxy that can lose
// acks.
func TestPublisherSuite(t *testing.T) {
	t.Run("nats", func(t *testing.T) {
		publishtest.RunPublisherSuite(t, publishtest.Driver{Open: openNATS})
	})
}

// natsSink is a real in-process JetStream server behind a proxy that can
// lose acks.
type natsSink struct {
	srv   *natstest.Server
	proxy *natstest.Proxy
}

const suiteMaxPayload = 64 << 10

func openNATS(t *testing.T) (publish.Publisher, publishtest.Sink) {
	srv := natstest.RunJetStream(t, &natstest.ServerOptions{MaxPayload: suiteMaxPayload})
	proxy := natstest.NewProxy(t, strings.TrimPrefix(srv.URL(), "nats://"))
	p, err := natsjs.NewPublisher(context.Background(), natsjs.Options{URL: proxy.URL(), CreateStream: true, AckTimeout: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p, &natsSink{srv: srv, proxy: proxy}
}

func (s *natsSink) Received(t *testing.T) []publishtest.Delivery {
	var out []publishtest.Delivery
	for _, m := range s.srv.Messages(t, natsjs.DefaultStream) {
		h := map[string]string{}
		for k, v := range m.Headers() {
			h[k] = v[0]
		}
		out = append(out, publishtest.Delivery{Event: decodeNATS(t, m), Headers: h})
	}
	return out
}
func (s *natsSink) Dedupes() bool     { return true }
func (s *natsSink) Down(t *testing.T) { s.srv.Shutdown() }
func (s *natsSink) Up(t *testing.T)   { s.srv.Start() }
func (s *natsSink) Refuse(t *testing.T, e *envelope.Event) bool {
	e.DataContentType = "application/octet-stream"
	e.Data = bytes.Repeat([]byte{'x'}, suiteMaxPayload+1)
	return true
}
func (s *natsSink) FailNext(t *testing.T, n int) bool {
	s.proxy.DropAcks(n) // stored, but the ack is lost on the way back
	return true
}
