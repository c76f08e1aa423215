package publish_test

import (
	"context"
	"sync"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/natsjs"
	"github.com/eventlite/eventlite/publish"
)

// counting wraps a real publisher and counts how often each event was
// handed to it.
type counting struct {
	publish.Publisher
	mu    sync.Mutex
	calls int
	seen  map[string]int
}

func newCounting(p publish.Publisher) *counting {
	return &counting{Publisher: p, seen: map[string]int{}}
}

func (c *counting) Publish(ctx context.Context, msgs []publish.Message) []publish.Result {
	c.mu.Lock()
	c.calls++
	for i := range msgs {
		c.seen[natsjs.MessageID(&msgs[i].Event)]++
	}
	c.mu.Unlock()
	return c.Publisher.Publish(ctx, msgs)
}

func (c *counting) count(e *envelope.Event) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.seen[natsjs.MessageID(e)]
}

// gated wraps a real publisher: after the real publish of a chosen call
// it reports on entered and waits for release before it returns, as a
// relay paused between publishing a batch and marking it. It ignores ctx
// while it waits, like a process that was stopped.
type gated struct {
	publish.Publisher
	mu      sync.Mutex
	calls   int
	at      int // the call to hold (1-based)
	entered chan []envelope.Event
	release chan struct{}
}

func newGated(p publish.Publisher, at int) *gated {
	return &gated{Publisher: p, at: at, entered: make(chan []envelope.Event, 1), release: make(chan struct{})}
}

func (g *gated) Publish(ctx context.Context, msgs []publish.Message) []publish.Result {
	res := g.Publisher.Publish(ctx, msgs)
	evs := make([]envelope.Event, len(msgs))
	for i := range msgs {
		evs[i] = msgs[i].Event
	}
	g.mu.Lock()
	g.calls++
	hold := g.calls == g.at
	g.mu.Unlock()
	if hold {
		g.entered <- evs
		<-g.release
	}
	return res
}
