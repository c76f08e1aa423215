package publish_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/natsjs"
	"github.com/eventlite/eventlite/natsjs/natstest"
	"github.com/eventlite/eventlite/publish"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/outbox"
	"github.com/eventlite/eventlite/store/storetest"
)

// TestRelayAppendsWhileRunningAcrossRestart: appenders write while a
// relay runs; halfway the relay is stopped and another one starts. Every
// event reaches the broker once (one message per event id, the Nats-Msg-Id
// dedupe aside: the relay sent each at most twice, only the batches in
// flight at the stop again), each stream in version order, every row
// marked published with its message's sequence, and nothing is left
// pending: the relay finds events above its watermark, not rows that
// appends wrote.
func TestRelayAppendsWhileRunningAcrossRestart(t *testing.T) {
	rng := rand.New(rand.NewPCG(seed(t), 13))
	srv := natstest.RunJetStream(t, nil)
	s := storetest.MustOpen(t, nil)
	pub := newCounting(newNATS(t, srv.URL(), natsjs.Options{}))
	const appenders, perAppender, batchSize = 4, 60, 8
	bs := newBatches()
	start := func() func() error {
		return runRelay(t, newRelay(t, publish.Options{Store: s, Publisher: pub, BatchSize: batchSize, OnBatch: bs.add}))
	}
	stop := start()
	half := make(chan struct{})
	var halfOnce sync.Once
	var wg sync.WaitGroup
	var mu sync.Mutex
	appended := 0
	sizes := make([][]int, appenders) // drawn up front: rng is not shared
	for a := range sizes {
		for range perAppender {
			sizes[a] = append(sizes[a], 1+rng.IntN(3))
		}
	}
	for a := range appenders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i, n := range sizes[a] {
				batch := make([]envelope.Event, n)
				for j := range batch {
					batch[j] = newEvent(t, "test.happened", map[string]int{"a": a, "i": i, "j": j})
				}
				if _, err := s.Append(context.Background(), fmt.Sprint("tenant", a%2), fmt.Sprint("stream-", (a+i)%5), store.Any, batch...); err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				appended += n
				mu.Unlock()
				if i == perAppender/2 {
					halfOnce.Do(func() { close(half) })
				}
			}
		}()
	}
	<-half
	if err := stop(); err != nil {
		t.Fatalf("first relay: %v", err)
	}
	stop = start()
	wg.Wait()
	bs.waitFor(t, "the outbox drained", func([]publish.BatchReport) bool {
		st, err := outbox.For(s).Stats(context.Background())
		return err == nil && st.Pending == 0
	})
	if err := stop(); err != nil {
		t.Fatalf("second relay: %v", err)
	}
	checkBroker(t, srv, s)
	evs := storedEvents(t, s)
	if len(evs) != appended {
		t.Fatalf("%d events stored, %d appended", len(evs), appended)
	}
	again := 0
	for i := range evs {
		switch n := pub.count(&evs[i]); {
		case n == 0 || n > 2:
			t.Errorf("event %d sent %d times", evs[i].Position, n)
		case n == 2:
			again++
		}
	}
	// At the stop a batch may be in flight and the one before it still
	// being marked: both go out again.
	if again > 2*batchSize {
		t.Errorf("%d events sent twice: more than the two batches in flight at the stop (%d)", again, 2*batchSize)
	}
}
