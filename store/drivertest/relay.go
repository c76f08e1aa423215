package drivertest

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/publish"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/outbox"
)

// memPublisher is a destination in memory: it keeps every event it
// accepted, in the order received, and numbers them as a broker would.
type memPublisher struct {
	mu  sync.Mutex
	got []envelope.Event
	seq map[string]uint64 // event id -> the sequence it was accepted under
}

func (p *memPublisher) Publish(_ context.Context, msgs []publish.Message) []publish.Result {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.seq == nil {
		p.seq = map[string]uint64{}
	}
	res := make([]publish.Result, len(msgs))
	for i, m := range msgs {
		e := m.Event
		p.got = append(p.got, e)
		p.seq[e.Tenant+"/"+e.ID] = uint64(len(p.got))
		res[i].Sequence = uint64(len(p.got))
	}
	return res
}

func (p *memPublisher) Ping(context.Context) error { return nil }
func (p *memPublisher) Close() error               { return nil }

// testRelayDeliversEveryEventOnceInStreamOrder: a relay drains the
// outbox; events appended afterwards are drained by a relay of another
// store on the same database (another process). The destination got
// every event once, each stream's in version order, and every outbox
// row is marked published with the sequence the destination gave it.
func testRelayDeliversEveryEventOnceInStreamOrder(t *testing.T, h Harness) {
	ctx := context.Background()
	s := h.Open(t, nil)
	pub := &memPublisher{}
	appendSome := func(round int) {
		for i := range 30 {
			evs := make([]envelope.Event, 1+i%3)
			for j := range evs {
				evs[j] = Event(t, "t", map[string]int{"round": round, "i": i, "j": j})
			}
			if _, err := s.Append(ctx, []string{"default", "acme"}[i%2], fmt.Sprint("s-", i%5), store.Any, evs...); err != nil {
				t.Fatal(err)
			}
		}
	}
	drain := func(st *store.Store, owner string) {
		t.Helper()
		r, err := publish.New(publish.Options{Store: st, Publisher: pub, Owner: owner, BatchSize: 7, Once: true})
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		if err := r.Run(ctx); err != nil {
			t.Fatalf("relay %s: %v", owner, err)
		}
	}
	appendSome(1)
	drain(s, "a")
	appendSome(2)
	other := s
	if h.Reopen != nil {
		other = h.Reopen(t, s, nil)
	}
	drain(other, "b")

	head, _ := s.Head(ctx)
	if int64(len(pub.got)) != head {
		t.Errorf("the destination got %d events, the log has %d", len(pub.got), head)
	}
	seen := map[string]bool{}
	last := map[string]int64{}
	for _, e := range pub.got {
		key, stream := e.Tenant+"/"+e.ID, e.Tenant+"/"+e.Stream
		if seen[key] {
			t.Errorf("event %d delivered twice", e.Position)
		}
		seen[key] = true
		if e.StreamVersion != last[stream]+1 {
			t.Errorf("%s: version %d delivered after version %d", stream, e.StreamVersion, last[stream])
		}
		last[stream] = e.StreamVersion
	}
	es, err := outbox.For(s).Entries(ctx, 0, int(head)+1)
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(es)) != head {
		t.Fatalf("%d outbox entries, want %d", len(es), head)
	}
	for _, e := range es {
		if e.PublishedAt.IsZero() || e.BrokerSequence != pub.seq[e.Tenant+"/"+e.EventID] {
			t.Errorf("outbox entry %d: published at %v with sequence %d, want the destination's %d",
				e.Position, e.PublishedAt, e.BrokerSequence, pub.seq[e.Tenant+"/"+e.EventID])
		}
	}
	if st, err := outbox.For(s).Stats(ctx); err != nil || st.Pending != 0 {
		t.Errorf("outbox after the relays: %+v, %v; want nothing pending", st, err)
	}
}
