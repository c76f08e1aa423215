package serve

import (
	"context"
	"sync"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/store"
)

// hubBuffer is how many batches a live reader may have waiting before it
// is dropped: a reader that cannot keep up is cut off (it resumes with
// Last-Event-ID), never buffered without bound.
const hubBuffer = 1024

// hubBatchMax caps the events of one broadcast batch.
const hubBatchMax = 1000

// hub follows the log once for every live reader: one goroutine reads each
// new commit (of every tenant) and hands the batch to each subscriber's
// bounded channel. Without it, each reader would query the store on every
// commit.
type hub struct {
	s       *store.Store
	closing <-chan struct{}

	mu      sync.Mutex
	started bool
	subs    map[*subscription]struct{}
	done    chan struct{} // closed when the loop ends
	err     error         // why the loop ended, under mu
}

// fed is an event of the feed with its structured JSON, encoded once for
// every reader.
type fed struct {
	envelope.Event
	json []byte
}

// subscription is one live reader's feed of batches in position order.
// ch is closed when the reader is dropped (too slow) or the hub stops.
type subscription struct {
	ch      chan []fed
	dropped bool // under hub.mu: closed for being too slow
}

// subscribe registers a reader. Every event committed after subscribe
// returns reaches ch, unless ch is closed; the reader reads what came
// before from the store.
func (h *hub) subscribe(ctx context.Context) (*subscription, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.err != nil {
		return nil, h.err
	}
	if !h.started {
		head, err := h.s.Head(ctx)
		if err != nil {
			return nil, err
		}
		h.started = true
		h.subs = make(map[*subscription]struct{})
		h.done = make(chan struct{})
		go h.run(head + 1)
	}
	sub := &subscription{ch: make(chan []fed, hubBuffer)}
	h.subs[sub] = struct{}{}
	return sub, nil
}

func (h *hub) unsubscribe(sub *subscription) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.subs[sub]; ok {
		delete(h.subs, sub)
		close(sub.ch)
	}
}

// wait waits for the loop to end, once it was asked to (closing).
func (h *hub) wait() {
	h.mu.Lock()
	done := h.done
	h.mu.Unlock()
	if done != nil {
		<-done
	}
}

func (h *hub) run(next int64) {
	defer close(h.done)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-h.closing:
			cancel()
		case <-ctx.Done():
		}
	}()
	err := h.follow(ctx, next)
	h.mu.Lock()
	defer h.mu.Unlock()
	if err == nil {
		err = context.Canceled
	}
	h.err = err
	for sub := range h.subs {
		delete(h.subs, sub)
		close(sub.ch)
	}
}

func (h *hub) follow(ctx context.Context, next int64) error {
	var batch []fed
	for {
		changed := h.s.Changed() // before reading: no commit goes unseen
		for {
			batch = batch[:0:0] // a new slice: subscribers keep the old one
			for e, err := range h.s.ReadAll(ctx, store.ReadAllOptions{From: next, Limit: hubBatchMax}) {
				if err != nil {
					if ctx.Err() != nil {
						return nil
					}
					return err
				}
				batch = append(batch, fed{Event: e, json: e.AppendJSON(nil)})
			}
			if len(batch) == 0 {
				break
			}
			next = batch[len(batch)-1].Position + 1
			h.broadcast(batch)
			if len(batch) < hubBatchMax {
				break
			}
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return nil
		}
	}
}

// broadcast hands batch to every subscriber without blocking; one whose
// channel is full is dropped.
func (h *hub) broadcast(batch []fed) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for sub := range h.subs {
		select {
		case sub.ch <- batch:
		default:
			sub.dropped = true
			delete(h.subs, sub)
			close(sub.ch)
		}
	}
}

// wasDropped reports whether sub was closed for being too slow.
func (h *hub) wasDropped(sub *subscription) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return sub.dropped
}

// error is why the loop ended, nil while it runs.
func (h *hub) error() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.err
}
