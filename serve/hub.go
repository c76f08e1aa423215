package serve

import (
	"context"
	"errors"
	"iter"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/store"
)

// hubBuffer is how many batches a live reader may have waiting before it
// is dropped: a reader that cannot keep up is cut off (it resumes with
// Last-Event-ID), never buffered without bound.
const hubBuffer = 1024

// pollBuffer is hubBuffer for a long poll, which filters each batch as
// it comes and holds a channel while it waits: a small one, so that many
// waiting polls hold little memory. One that falls behind reads the
// store instead.
const pollBuffer = 16

// hubBatchMax caps the events of one broadcast batch.
const hubBatchMax = 1000

// The hub's retries after a failed read: the first after hubRetryMin,
// each later one after twice the wait before, up to hubRetryMax.
const (
	hubRetryMin = 50 * time.Millisecond
	hubRetryMax = 5 * time.Second
)

// hubSpacing is the least time between the starts of two reads of the
// hub.
const hubSpacing = time.Millisecond

// errHubStopped is why the hub's loop ended when the handler closed.
var errHubStopped = errors.New("live reads stopped: the server is closing")

// hub follows the log once for every live reader and long poll: one
// goroutine reads each new commit (of every tenant) and hands each
// tenant's part of the batch to the bounded channels of that tenant's
// subscribers, so a commit wakes only the readers of the tenants it
// touched. Without it, each reader would query the store on every
// commit.
//
// A failed read does not end the loop: it is retried from the same
// position with a backoff (hubRetryMin doubling to hubRetryMax), logged
// once when the outage starts and once when a read works again, so the
// subscribers see neither a gap nor a duplicate, only a delay. Only a
// closed store (store.ErrClosed) or the handler's Close ends it.
type hub struct {
	s       *store.Store
	log     hclog.Logger
	closing <-chan struct{}
	// read is s.ReadAll: the hub's reads and the long polls' go through
	// it, so that tests count them and inject faults.
	read               readFunc
	head               func(context.Context) (int64, error) // s.Head; tests hold it
	retryMin, retryMax time.Duration
	spacing            time.Duration // hubSpacing

	mu      sync.Mutex
	started bool
	ready   chan struct{} // closed once the loop knows its first position, or ended
	isReady bool          // ready is closed
	subs    map[string]map[*subscription]struct{}
	done    chan struct{} // closed when the loop ends
	err     error         // why the loop ended, under mu
	// seen is the newest position the loop has read (the head when it
	// started): every event at or below it was handed to the
	// subscribers of its tenant, every event above it will be.
	seen int64
}

// readFunc reads the log as store.Store.ReadAll does.
type readFunc func(ctx context.Context, opts store.ReadAllOptions) iter.Seq2[envelope.Event, error]

func newHub(s *store.Store, closing <-chan struct{}, log hclog.Logger) *hub {
	return &hub{s: s, log: log, closing: closing, read: s.ReadAll, head: s.Head, retryMin: hubRetryMin, retryMax: hubRetryMax, spacing: hubSpacing,
		subs: make(map[string]map[*subscription]struct{})}
}

// fed is an event of the feed with its structured JSON, encoded once for
// every reader.
type fed struct {
	envelope.Event
	json []byte
}

// subscription is one reader's feed of its tenant's batches in position
// order. ch is closed when the reader is dropped (too slow) or the hub
// stops.
type subscription struct {
	tenant  string
	ch      chan []fed
	dropped bool // under hub.mu: closed for being too slow
}

// subscribe registers a reader of tenant's commits, with room for
// buffer batches. Every event of the tenant committed after subscribe
// returns reaches ch, unless ch is closed; the reader reads what came before from the store. No store
// call runs under the hub's mutex: the loop finds its first position
// itself, and subscribe waits for that (or for ctx).
func (h *hub) subscribe(ctx context.Context, tenant string, buffer int) (*subscription, error) {
	h.mu.Lock()
	if h.err != nil {
		defer h.mu.Unlock()
		return nil, h.err
	}
	select {
	case <-h.closing:
		h.mu.Unlock()
		return nil, errHubStopped
	default:
	}
	if !h.started {
		h.started = true
		h.ready = make(chan struct{})
		h.done = make(chan struct{})
		go h.run()
	}
	sub := &subscription{tenant: tenant, ch: make(chan []fed, buffer)}
	ts := h.subs[tenant]
	if ts == nil {
		ts = make(map[*subscription]struct{})
		h.subs[tenant] = ts
	}
	ts[sub] = struct{}{}
	ready := h.ready
	h.mu.Unlock()

	select {
	case <-ready:
	case <-ctx.Done():
		h.unsubscribe(sub)
		return nil, ctx.Err()
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.err != nil {
		return nil, h.err
	}
	return sub, nil
}

func (h *hub) unsubscribe(sub *subscription) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.remove(sub)
}

// remove closes sub's channel unless it is closed; under mu.
func (h *hub) remove(sub *subscription) {
	ts := h.subs[sub.tenant]
	if _, ok := ts[sub]; !ok {
		return
	}
	delete(ts, sub)
	if len(ts) == 0 {
		delete(h.subs, sub.tenant)
	}
	close(sub.ch)
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

// markReady closes ready once; head is where the loop starts.
func (h *hub) markReady(head int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.isReady {
		h.seen = head
		h.isReady = true
		close(h.ready)
	}
}

func (h *hub) run() {
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
	err := h.follow(ctx)
	if err == nil {
		err = errHubStopped
	}
	h.mu.Lock()
	h.err = err
	for _, ts := range h.subs {
		for sub := range ts {
			h.remove(sub)
		}
	}
	h.mu.Unlock()
	h.markReady(0)
}

// follow reads the log from the head at its start, waking at each commit
// the store announces, until ctx ends (nil) or the store is closed.
func (h *hub) follow(ctx context.Context) error {
	next := int64(0) // the next position to read; 0 until the head is known
	failures := 0    // failed reads since the last that worked
	var lastRead time.Time
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	pause := func(d time.Duration) bool {
		timer.Reset(d)
		select {
		case <-timer.C:
			return true
		case <-ctx.Done():
			return false
		}
	}
	for {
		changed := h.s.Changed() // before reading: no commit goes unseen
		var err error
		if next == 0 {
			var head int64
			if head, err = h.head(ctx); err == nil {
				next = head + 1
				h.markReady(head)
			}
		}
		if err == nil {
			lastRead = time.Now()
			next, err = h.catchUp(ctx, next, func() {
				// Logged before the batch is handed out: a reader that
				// sees events again finds the recovery logged.
				if failures > 0 {
					h.log.Info(hubRecoveryMsg, "position", next, "failed_reads", failures)
					failures = 0
				}
			})
		}
		switch {
		case ctx.Err() != nil:
			return nil
		case errors.Is(err, store.ErrClosed):
			return err
		case err != nil:
			failures++
			if failures == 1 {
				h.log.Warn(hubOutageMsg+"; retrying with backoff, live readers wait and then resume where they were",
					"position", next, "error", err)
			}
			if !pause(min(h.retryMin<<min(failures-1, 30), h.retryMax)) {
				return nil
			}
			continue
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return nil
		}
		// Commits that come back to back are read together: reads start
		// h.spacing apart at least, so a busy writer does not pay a read
		// of the hub for each of its commits.
		if d := h.spacing - time.Since(lastRead); d > 0 && !pause(d) {
			return nil
		}
	}
}

// The log lines of an outage and of its end.
const (
	hubOutageMsg   = "live reads: reading the log failed"
	hubRecoveryMsg = "live reads: reading the log works again"
)

// catchUp reads and hands out every event from next on, in batches of
// hubBatchMax, and returns the next position to read; read is called
// once the first read worked. A read that fails hands out nothing of its
// batch: the retry reads it again from next.
func (h *hub) catchUp(ctx context.Context, next int64, read func()) (int64, error) {
	for {
		var batch []fed // a new slice: subscribers keep the old one
		for e, err := range h.read(ctx, store.ReadAllOptions{From: next, Limit: hubBatchMax}) {
			if err != nil {
				return next, err
			}
			batch = append(batch, fed{Event: e, json: e.AppendJSON(nil)})
		}
		if read != nil {
			read()
			read = nil
		}
		if len(batch) == 0 {
			return next, nil
		}
		next = batch[len(batch)-1].Position + 1
		h.broadcast(batch)
		if len(batch) < hubBatchMax {
			return next, nil
		}
	}
}

// broadcast hands each tenant's part of batch to that tenant's
// subscribers without blocking; one whose channel is full is dropped.
func (h *hub) broadcast(batch []fed) {
	parts := byTenant(batch)
	h.mu.Lock()
	defer h.mu.Unlock()
	h.seen = batch[len(batch)-1].Position
	for _, part := range parts {
		for sub := range h.subs[part[0].Tenant] {
			select {
			case sub.ch <- part:
			default:
				sub.dropped = true
				h.remove(sub)
			}
		}
	}
}

// byTenant splits batch into its tenants' parts, each in position order;
// a batch of one tenant is its only part.
func byTenant(batch []fed) [][]fed {
	if len(batch) == 0 {
		return nil
	}
	one := true
	for i := range batch {
		if batch[i].Tenant != batch[0].Tenant {
			one = false
			break
		}
	}
	if one {
		return [][]fed{batch}
	}
	var parts [][]fed
	index := make(map[string]int)
	for _, f := range batch {
		i, ok := index[f.Tenant]
		if !ok {
			i = len(parts)
			index[f.Tenant] = i
			parts = append(parts, nil)
		}
		parts[i] = append(parts[i], f)
	}
	return parts
}

// wasDropped reports whether sub was closed for being too slow.
func (h *hub) wasDropped(sub *subscription) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return sub.dropped
}

// position is seen: the events at or below it reached the subscribers'
// channels (a subscriber drains its channel to have them all).
func (h *hub) position() int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.seen
}

// error is why the loop ended, nil while it runs.
func (h *hub) error() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.err
}
