package publish_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/eventlite/eventlite/publish"
	"github.com/eventlite/eventlite/store/storetest"
)

// downable is a destination that is down while down is set: every
// publish and ping answers Unreachable, with an error that changes from
// round to round.
type downable struct {
	publish.Publisher
	down   atomic.Bool
	rounds atomic.Int64
}

func (d *downable) Publish(ctx context.Context, msgs []publish.Message) []publish.Result {
	if !d.down.Load() {
		return d.Publisher.Publish(ctx, msgs)
	}
	n := d.rounds.Add(1)
	res := make([]publish.Result, len(msgs))
	for i := range res {
		res[i].Err = &publish.Error{Class: publish.Unreachable, Err: fmt.Errorf("dial: injected (round %d)", n)}
	}
	return res
}

func (d *downable) Ping(ctx context.Context) error {
	if d.down.Load() {
		return &publish.Error{Class: publish.Unreachable, Err: errors.New("ping: injected")}
	}
	return d.Publisher.Ping(ctx)
}

// syncBuffer is a log output read while the relay writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// A relay whose destination is down says since when in its Stats, and
// warns once however many rounds fail (with errors that differ); when
// the destination is back, Stats says so and the relay logs it.
func TestRelayUnreachableSince(t *testing.T) {
	t.Parallel()
	s := storetest.MustOpen(t, nil)
	appendEvents(t, s, "default", "s", 2)
	pub := &downable{Publisher: publish.NewStdout(io.Discard)}
	pub.down.Store(true)
	var logs syncBuffer
	rounds := make(chan publish.BatchReport, 100)
	before := time.Now()
	r, err := publish.New(publish.Options{Store: s, Publisher: pub, BackoffBase: time.Millisecond, BackoffMax: 5 * time.Millisecond,
		Logger: hclog.New(&hclog.LoggerOptions{Level: hclog.Info, Output: &logs}),
		OnBatch: func(b publish.BatchReport) {
			select {
			case rounds <- b:
			default:
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	if st := r.Stats(); !st.UnreachableSince.IsZero() || st.UnreachableError != "" {
		t.Errorf("before it ran: %+v", st)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	wait := func(what string, cond func(publish.BatchReport) bool) {
		t.Helper()
		timeout := time.After(10 * time.Second)
		for {
			select {
			case b := <-rounds:
				if cond(b) {
					return
				}
			case err := <-done:
				t.Fatalf("waiting for %s: Run returned %v", what, err)
			case <-timeout:
				t.Fatalf("waiting for %s: timed out", what)
			}
		}
	}

	// A round is reported before the relay backs off: once the second
	// round is reported, the first backed off.
	down := 0
	wait("two rounds against the down destination", func(b publish.BatchReport) bool {
		if b.Down != nil {
			down++
		}
		return down == 2
	})
	first := r.Stats()
	if first.UnreachableSince.Before(before) || first.UnreachableSince.After(time.Now()) || !strings.Contains(first.UnreachableError, "injected") {
		t.Errorf("down: UnreachableSince %v (the test began %v), UnreachableError %q", first.UnreachableSince, before, first.UnreachableError)
	}
	down = 0
	wait("five more rounds", func(b publish.BatchReport) bool {
		if b.Down != nil {
			down++
		}
		return down == 5
	})
	if st := r.Stats(); !st.UnreachableSince.Equal(first.UnreachableSince) || st.UnreachableError == first.UnreachableError || st.Unreachable < 6 {
		t.Errorf("still down: %+v, first %+v", st, first)
	}

	pub.down.Store(false)
	wait("the events published", func(b publish.BatchReport) bool { return b.Published == 2 })
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if st := r.Stats(); !st.UnreachableSince.IsZero() || st.UnreachableError != "" || st.Published != 2 {
		t.Errorf("back up: %+v", st)
	}
	out := logs.String()
	if n := strings.Count(out, "[WARN]"); n != 1 || !strings.Contains(out, "[WARN]  relay: destination unreachable") {
		t.Errorf("%d warnings over %d rounds down, want one:\n%s", n, pub.rounds.Load(), out)
	}
	if !strings.Contains(out, "destination reachable again") {
		t.Errorf("no word that the destination is back:\n%s", out)
	}
}
