package publish_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/eventlite/eventlite/natsjs"
	"github.com/eventlite/eventlite/natsjs/natstest"
	"github.com/eventlite/eventlite/publish"
	"github.com/eventlite/eventlite/store/outbox"
	"github.com/eventlite/eventlite/store/storetest"
)

// unreachableFor wraps a real publisher and fails one event as a
// publisher does when the destination drops the connection on it:
// Unreachable. Everything else goes to the real destination. Its Ping
// fails while pingDown is set.
type unreachableFor struct {
	publish.Publisher
	id       string
	pingDown atomic.Bool
}

func (u *unreachableFor) Publish(ctx context.Context, msgs []publish.Message) []publish.Result {
	var pass []publish.Message
	var idx []int
	res := make([]publish.Result, len(msgs))
	stopped := map[string]bool{}
	for i, m := range msgs {
		e := m.Event
		k := e.Tenant + "/" + e.Stream
		switch {
		case stopped[k]:
			res[i].Err = publish.ErrNotAttempted
		case e.ID == u.id:
			res[i].Err = &publish.Error{Class: publish.Unreachable, Err: errors.New("connection closed: injected")}
			stopped[k] = true
		default:
			pass = append(pass, m)
			idx = append(idx, i)
		}
	}
	for j, r := range u.Publisher.Publish(ctx, pass) {
		res[idx[j]] = r
	}
	return res
}

func (u *unreachableFor) Ping(ctx context.Context) error {
	if u.pingDown.Load() {
		return &publish.Error{Class: publish.Unreachable, Err: errors.New("ping: injected")}
	}
	return u.Publisher.Ping(ctx)
}

// An event that a publisher reports Unreachable, in a round where another
// request to the destination succeeded and the destination answers a
// ping, counts its attempts and becomes a dead letter after the bound,
// whatever the publisher; other streams are delivered in the rounds that
// read them.
func TestRelayCountsUnreachableEventWhenOthersSucceed(t *testing.T) {
	srv := natstest.RunJetStream(t, nil)
	s := storetest.MustOpen(t, nil)
	bad := appendEvents(t, s, "default", "bad", 1)[0]
	fillOthers(t, s, 6, 4)
	pub := &unreachableFor{Publisher: newNATS(t, srv.URL(), natsjs.Options{}), id: bad.ID}
	bs := newBatches()
	const maxAttempts = 3
	r := newRelay(t, publish.Options{Store: s, Publisher: pub, Once: true, BatchSize: 5, MaxAttempts: maxAttempts,
		RetryBase: time.Nanosecond, RetryMax: time.Nanosecond, OnBatch: bs.add})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := r.Run(ctx); err != nil {
		t.Fatalf("run: %v; want the outbox drained to one dead letter", err)
	}
	dl, err := outbox.For(s).DeadLetters(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(dl) != 1 || dl[0].EventID != bad.ID || dl[0].Attempts != maxAttempts {
		t.Fatalf("dead letters %+v: want %s after %d attempts", dl, bad.ID, maxAttempts)
	}
	checkRounds(t, bs.all(), 0)
	if st := r.Stats(); st.Unreachable != 0 {
		t.Errorf("%d round(s) backed off as unreachable", st.Unreachable)
	}
	if got, want := len(srv.Messages(t, natsjs.DefaultStream)), len(storedEvents(t, s))-1; got != want {
		t.Errorf("broker holds %d messages, want %d", got, want)
	}
}

// When the destination does not answer a ping after such a round, it went
// down: nothing is counted against the event, and the relay backs off.
func TestRelayCountsNothingWhenDestinationWentDown(t *testing.T) {
	srv := natstest.RunJetStream(t, nil)
	s := storetest.MustOpen(t, nil)
	bad := appendEvents(t, s, "default", "bad", 1)[0]
	fillOthers(t, s, 2, 2)
	pub := &unreachableFor{Publisher: newNATS(t, srv.URL(), natsjs.Options{}), id: bad.ID}
	pub.pingDown.Store(true)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var first atomic.Pointer[publish.BatchReport]
	r := newRelay(t, publish.Options{Store: s, Publisher: pub, Once: true, MaxAttempts: 3,
		OnBatch: func(rep publish.BatchReport) {
			first.CompareAndSwap(nil, &rep)
			cancel()
		}})
	r.Run(ctx)
	rep := first.Load()
	if rep == nil || rep.Down == nil || rep.Published != 4 || rep.Retrying != 0 {
		t.Fatalf("first round %+v: want the others published and the destination taken for down", rep)
	}
	for _, o := range outboxEntries(t, s) {
		if o.EventID == bad.ID && (o.Attempts != 0 || !o.PublishedAt.IsZero()) {
			t.Errorf("the event's row %+v: want no attempt counted", o)
		}
	}
}
