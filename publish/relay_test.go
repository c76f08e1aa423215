package publish_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/internal/inside"
	"github.com/eventlite/eventlite/natsjs"
	"github.com/eventlite/eventlite/natsjs/natstest"
	"github.com/eventlite/eventlite/publish"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/outbox"
	"github.com/eventlite/eventlite/store/storetest"
)

// seed returns a seed for the test's random choices, printed so a
// failure can be replayed with EVENTLITE_SEED.
func seed(t testing.TB) uint64 {
	t.Helper()
	s := rand.Uint64()
	if v := getenv("EVENTLITE_SEED"); v != "" {
		fmt.Sscan(v, &s)
	}
	t.Logf("seed %d (EVENTLITE_SEED=%d to replay)", s, s)
	return s
}

func newNATS(t testing.TB, url string, o natsjs.Options) *natsjs.Publisher {
	t.Helper()
	o.URL = url
	o.CreateStream = true
	p, err := natsjs.NewPublisher(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

func newRelay(t testing.TB, o publish.Options) *publish.Relay {
	t.Helper()
	if o.Logger == nil {
		o.Logger = hclog.New(&hclog.LoggerOptions{Name: "test", Level: hclog.Warn, Output: testWriter{t}})
	}
	r, err := publish.New(o)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// testWriter sends logs to t.Log.
type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}

// runRelay runs r in the background; the returned function stops it and
// returns Run's result.
func runRelay(t testing.TB, r *publish.Relay) (stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	var once atomic.Bool
	stop = func() error {
		if !once.CompareAndSwap(false, true) {
			return nil
		}
		cancel()
		select {
		case err := <-done:
			return err
		case <-time.After(30 * time.Second):
			t.Fatalf("relay did not stop")
			return nil
		}
	}
	t.Cleanup(func() { stop() })
	return stop
}

// checkBroker checks the stream against the log: one message per event
// id, the right id on each, each stream in version order, and every row
// marked with its message's sequence.
func checkBroker(t *testing.T, srv *natstest.Server, s *store.Store) {
	t.Helper()
	evs := storedEvents(t, s)
	msgs := srv.Messages(t, natsjs.DefaultStream)
	if len(msgs) != len(evs) {
		t.Errorf("broker holds %d messages for %d events", len(msgs), len(evs))
	}
	seqByID := map[string]uint64{}
	last := map[string]int64{}
	for _, m := range msgs {
		e := decodeNATS(t, m)
		id := m.Headers().Get("Nats-Msg-Id")
		if id != e.Tenant+":"+e.ID {
			t.Errorf("message id %q for event %s:%s", id, e.Tenant, e.ID)
		}
		if _, dup := seqByID[id]; dup {
			t.Errorf("two messages for %s", id)
		}
		md, _ := m.Metadata()
		seqByID[id] = md.Sequence.Stream
		k := e.Tenant + "/" + e.Stream
		if e.StreamVersion != last[k]+1 {
			t.Errorf("%s: version %d stored after %d", k, e.StreamVersion, last[k])
		}
		last[k] = e.StreamVersion
	}
	for _, o := range outboxEntries(t, s) {
		if o.PublishedAt.IsZero() {
			t.Errorf("row %d not published", o.Position)
			continue
		}
		if seq := seqByID[o.Tenant+":"+o.EventID]; o.BrokerSequence != seq {
			t.Errorf("row %d: broker sequence %d, the stream has %d", o.Position, o.BrokerSequence, seq)
		}
	}
}

func TestRelayDeliversEverythingInStreamOrder(t *testing.T) {
	srv := natstest.RunJetStream(t, nil)
	s := storetest.MustOpen(t, nil)
	for i := range 5 {
		appendEvents(t, s, fmt.Sprint("tenant", i%2), fmt.Sprint("stream-", i), 7)
	}
	appendEvents(t, s, "tenant0", "stream-0", 3)
	bs := newBatches()
	r := newRelay(t, publish.Options{Store: s, Publisher: newNATS(t, srv.URL(), natsjs.Options{}), Once: true, BatchSize: 8, OnBatch: bs.add})
	if err := r.Run(context.Background()); err != nil {
		t.Fatalf("run: %v", err)
	}
	checkBroker(t, srv, s)
	token := int64(0)
	for _, o := range outboxEntries(t, s) {
		if token == 0 {
			token = o.PublishedToken
		}
		if o.PublishedToken != token || token == 0 || o.Attempts != 0 {
			t.Errorf("row %d: token %d attempts %d", o.Position, o.PublishedToken, o.Attempts)
		}
	}
	if len(bs.all()) != 5 { // 38 rows in batches of 8
		t.Errorf("%d batches, want 5", len(bs.all()))
	}
	// The lease was released: another relay takes it at once.
	if _, err := store.Inner(inside.Key{}, s).AcquireLease(context.Background(), "relay", "next", time.Minute); err != nil {
		t.Errorf("lease after a clean stop: %v", err)
	}
	st, _ := outbox.For(s).Stats(context.Background())
	if st.Pending != 0 || st.Published != 38 {
		t.Errorf("stats: %+v", st)
	}
}

// An ack lost on the way back after the broker stored the messages: the
// relay counts a transient failure, publishes again after its backoff,
// JetStream's dedupe keeps one copy, and the rows are marked.
func TestRelayAckLostAfterStore(t *testing.T) {
	srv := natstest.RunJetStream(t, nil)
	proxy := natstest.NewProxy(t, strings.TrimPrefix(srv.URL(), "nats://"))
	s := storetest.MustOpen(t, nil)
	appendEvents(t, s, "default", "a", 3)
	appendEvents(t, s, "default", "b", 2)
	clock := newManualClock()
	bs := newBatches()
	pub := newNATS(t, proxy.URL(), natsjs.Options{AckTimeout: 300 * time.Millisecond})
	proxy.DropAcks(5) // the first batch's five acks
	r := newRelay(t, publish.WithTestHooks(publish.Options{Store: s, Publisher: pub, RetryBase: time.Second, OnBatch: bs.add}, clock, 0))
	stop := runRelay(t, r)
	bs.waitFor(t, "the failed batch", func(b []publish.BatchReport) bool { return len(b) >= 1 })
	first := bs.all()[0]
	if first.Retrying != 2 || first.Waiting != 3 || first.Published != 0 {
		// a and b each stop at their first event; the rest wait.
		t.Fatalf("first batch: %+v", first)
	}
	if n := len(srv.Messages(t, natsjs.DefaultStream)); n != 5 {
		t.Fatalf("broker holds %d messages after the lost acks, want all 5", n)
	}
	for _, o := range outboxEntries(t, s) {
		if o.Version == 1 && (o.Attempts != 1 || o.LastError == "" || o.NextAttemptAt.IsZero()) {
			t.Errorf("failed row: %+v", o)
		}
	}
	// Nothing happens until the retry falls due on the relay's clock.
	clock.Advance(time.Second)
	bs.waitFor(t, "the retry", published(5))
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	checkBroker(t, srv, s)
	dups := 0
	for _, b := range bs.all() {
		dups += b.Duplicates
	}
	if dups != 5 {
		t.Errorf("%d duplicate acks, want 5 (every message was stored the first time)", dups)
	}
	if proxy.Dropped.Load() != 5 {
		t.Errorf("%d acks dropped", proxy.Dropped.Load())
	}
}

// A broker that is down: the relay backs off and counts no attempt; once
// the broker is back, everything goes out, nothing lost or dead-lettered.
func TestRelayBrokerDownThenBack(t *testing.T) {
	srv := natstest.RunJetStream(t, nil)
	s := storetest.MustOpen(t, nil)
	pub := newNATS(t, srv.URL(), natsjs.Options{AckTimeout: time.Second})
	appendEvents(t, s, "default", "before", 3)
	bs := newBatches()
	r := newRelay(t, publish.Options{Store: s, Publisher: pub, BackoffBase: 10 * time.Millisecond, BackoffMax: 50 * time.Millisecond,
		MaxAttempts: 2, OnBatch: bs.add})
	stop := runRelay(t, r)
	bs.waitFor(t, "the first events", func(b []publish.BatchReport) bool { return len(b) > 0 && b[0].Published == 3 })
	srv.Shutdown()
	appendEvents(t, s, "default", "during", 5)
	appendEvents(t, s, "other", "during", 5)
	bs.waitFor(t, "ten rounds against the down broker", func(b []publish.BatchReport) bool {
		n := 0
		for _, r := range b {
			if r.Down != nil {
				n++
			}
		}
		return n >= 10
	})
	for _, o := range outboxEntries(t, s) {
		if o.Attempts != 0 || !o.DeadAt.IsZero() {
			t.Fatalf("row %d while the broker is down: attempts %d dead %v", o.Position, o.Attempts, o.DeadAt)
		}
	}
	srv.Start()
	bs.waitFor(t, "everything published", published(13))
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	checkBroker(t, srv, s)
	st, _ := outbox.For(s).Stats(context.Background())
	if st.DeadLettered != 0 || st.Retried != 0 || st.Pending != 0 {
		t.Errorf("stats: %+v", st)
	}
	if rs := r.Stats(); rs.Unreachable < 10 || rs.Published != 13 {
		t.Errorf("relay stats: %+v", rs)
	}
}

// A poison event, larger than the broker takes: dead letter at once, its
// stream parked, other streams delivered, no retry loop; after the limit
// is raised, a retry delivers it and its stream's parked events in order.
func TestRelayPoisonEvent(t *testing.T) {
	const limit = 64 << 10
	srv := natstest.RunJetStream(t, &natstest.ServerOptions{MaxPayload: limit})
	s := storetest.MustOpen(t, nil)
	ctx := context.Background()
	big := newEvent(t, "blob.stored", map[string]string{"blob": strings.Repeat("x", 100<<10)})
	res, err := s.Append(ctx, "default", "poisoned", store.NoStream, big)
	if err != nil {
		t.Fatal(err)
	}
	poison := res.Events[0]
	appendEvents(t, s, "default", "poisoned", 2)
	appendEvents(t, s, "default", "healthy", 3)
	pub := newCounting(newNATS(t, srv.URL(), natsjs.Options{}))
	bs := newBatches()
	r := newRelay(t, publish.Options{Store: s, Publisher: pub, OnBatch: bs.add})
	stop := runRelay(t, r)
	bs.waitFor(t, "the healthy stream", published(3))
	dls, err := outbox.For(s).DeadLetters(ctx, "default")
	if err != nil || len(dls) != 1 || dls[0].EventID != poison.ID || dls[0].Attempts != 1 {
		t.Fatalf("dead letters: %+v %v", dls, err)
	}
	msg := dls[0].Error
	for _, want := range []string{fmt.Sprint(limit), "max_payload", "dlq retry", "bytes as a NATS message"} {
		if !strings.Contains(msg, want) {
			t.Errorf("dead letter error %q does not name %q", msg, want)
		}
	}
	parked, _ := outbox.For(s).ParkedStreams(ctx, "")
	if len(parked) != 1 || parked[0].Stream != "poisoned" || parked[0].Waiting != 3 {
		t.Errorf("parked: %+v", parked)
	}
	// More commits wake the relay; the poison is not tried again.
	appendEvents(t, s, "default", "healthy", 2)
	bs.waitFor(t, "the new events", published(5))
	if n := pub.count(&poison); n != 1 {
		t.Errorf("the poison event was handed to the publisher %d times, want 1", n)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	// A drain now reports the parked rows instead of waiting.
	r2 := newRelay(t, publish.Options{Store: s, Publisher: pub, Once: true})
	var inc *publish.IncompleteError
	if err := r2.Run(ctx); !errors.As(err, &inc) || inc.Pending != 2 || !strings.Contains(inc.Reason, "dead letter") {
		t.Fatalf("drain with a parked stream: %v", err)
	}
	// Raise the limit, retry the dead letter: it and its stream go out.
	srv.Restart(1 << 20)
	if _, err := outbox.For(s).RetryDeadLetter(ctx, "default", poison.ID); err != nil {
		t.Fatal(err)
	}
	r3 := newRelay(t, publish.Options{Store: s, Publisher: newNATS(t, srv.URL(), natsjs.Options{}), Once: true})
	if err := r3.Run(ctx); err != nil {
		t.Fatalf("drain after the retry: %v", err)
	}
	checkBroker(t, srv, s)
}

// A transient failure of one event, while other events get through: it
// is retried with exponential backoff up to the bound, then dead-lettered.
func TestRelayTransientFailuresDeadLetterAfterBound(t *testing.T) {
	_, sk := openHTTP(t, false)
	sink := sk.(*httpSink)
	s := storetest.MustOpen(t, nil)
	pub, err := publish.NewHTTP(publish.HTTPOptions{URL: "http://" + sink.addr + "/"})
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	flaky := &failingTypes{Publisher: pub, transient: "test.flaky"}
	ctx := context.Background()
	res, err := s.Append(ctx, "default", "f", store.NoStream, newEvent(t, "test.flaky", nil), newEvent(t, "test.ok", nil))
	if err != nil {
		t.Fatal(err)
	}
	appendEvents(t, s, "default", "g", 1)
	clock := newManualClock()
	bs := newBatches()
	r := newRelay(t, publish.WithTestHooks(publish.Options{Store: s, Publisher: flaky, MaxAttempts: 4, RetryBase: time.Second, RetryMax: 3 * time.Second, OnBatch: bs.add}, clock, seed(t)))
	stop := runRelay(t, r)
	var nexts []time.Duration
	for attempt := 1; attempt < 4; attempt++ {
		bs.waitFor(t, fmt.Sprint("attempt ", attempt), func(b []publish.BatchReport) bool {
			n := 0
			for _, r := range b {
				n += r.Retrying
			}
			return n == attempt
		})
		o := outboxEntries(t, s)[0]
		if o.Attempts != attempt {
			t.Fatalf("attempts %d, want %d", o.Attempts, attempt)
		}
		nexts = append(nexts, o.NextAttemptAt.Sub(clock.Now()))
		clock.Advance(o.NextAttemptAt.Sub(clock.Now()))
	}
	bs.waitFor(t, "the dead letter", func(b []publish.BatchReport) bool { return b[len(b)-1].DeadLettered == 1 })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	// Backoff: base doubled per attempt, capped, jittered into [d/2, d].
	for i, want := range []time.Duration{time.Second, 2 * time.Second, 3 * time.Second} {
		if nexts[i] < want/2 || nexts[i] > want {
			t.Errorf("wait after attempt %d: %s, want within [%s, %s]", i+1, nexts[i], want/2, want)
		}
	}
	dls, _ := outbox.For(s).DeadLetters(ctx, "")
	if len(dls) != 1 || dls[0].EventID != res.Events[0].ID || dls[0].Attempts != 4 || !strings.Contains(dls[0].Error, "gave up after 4 attempts") ||
		!dls[0].FirstFailed.Before(dls[0].LastFailed) && !dls[0].FirstFailed.Equal(dls[0].LastFailed) {
		t.Errorf("dead letter: %+v", dls)
	}
	// f's second event never went out; g did.
	got := sink.Received(t)
	if len(got) != 1 || got[0].Event.Stream != "g" {
		t.Errorf("sink got %+v", got)
	}
}

// failingTypes wraps a real publisher and fails events of a type with a
// transient error, after the destination was asked to do nothing: a fault
// injected around the real thing.
type failingTypes struct {
	publish.Publisher
	transient string
}

func (f *failingTypes) Publish(ctx context.Context, msgs []publish.Message) []publish.Result {
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
		case e.Type == f.transient:
			res[i].Err = &publish.Error{Class: publish.Transient, Err: errors.New("HTTP 503: injected")}
			stopped[k] = true
		default:
			pass = append(pass, m)
			idx = append(idx, i)
		}
	}
	for j, r := range f.Publisher.Publish(ctx, pass) {
		res[idx[j]] = r
	}
	return res
}

// Cancelling ctx stops a relay within 2 s even while it backs off, and it
// releases its lease.
func TestRelayStopsPromptlyWhileBackingOff(t *testing.T) {
	srv := natstest.RunJetStream(t, nil)
	s := storetest.MustOpen(t, nil)
	pub := newNATS(t, srv.URL(), natsjs.Options{})
	srv.Shutdown()
	appendEvents(t, s, "default", "a", 1)
	bs := newBatches()
	r := newRelay(t, publish.Options{Store: s, Publisher: pub, BackoffBase: time.Hour, BackoffMax: time.Hour, Owner: "me", OnBatch: bs.add})
	stop := runRelay(t, r)
	bs.waitFor(t, "backing off", func(b []publish.BatchReport) bool { return len(b) > 0 && b[0].Down != nil })
	start := time.Now()
	if err := stop(); err != nil {
		t.Fatalf("run: %v", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("stopping took %s", d)
	}
	leases, _ := s.Leases().List(context.Background())
	if len(leases) != 1 || leases[0].Owner != "" {
		t.Errorf("lease after stop: %+v", leases)
	}
	// The interrupted drain says what is left.
	r2 := newRelay(t, publish.Options{Store: s, Publisher: pub, Once: true, BackoffBase: time.Hour, BackoffMax: time.Hour, OnBatch: bs.add})
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	var inc *publish.IncompleteError
	if err := r2.Run(ctx); !errors.As(err, &inc) || inc.Pending != 1 || !strings.Contains(inc.Reason, "unreachable") || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("drain against a down broker: %v", err)
	}
}

// A relay whose lease was taken over while its batch was in flight: the
// broker got the batch, the store refuses the marks, the relay stands by.
func TestRelayLostLeaseWritesNothing(t *testing.T) {
	srv := natstest.RunJetStream(t, nil)
	s := storetest.MustOpen(t, nil)
	ctx := context.Background()
	appendEvents(t, s, "default", "a", 4)
	gate := newGated(newNATS(t, srv.URL(), natsjs.Options{}), 1)
	bs := newBatches()
	r := newRelay(t, publish.Options{Store: s, Publisher: gate, Owner: "paused", LeaseTTL: time.Hour, RenewEvery: 50 * time.Minute, OnBatch: bs.add})
	stop := runRelay(t, r)
	<-gate.entered
	// Meanwhile its lease is lost and taken over.
	old := store.Lease{Resource: "relay", Owner: "paused", Token: r.Stats().LeaseToken}
	if err := store.Inner(inside.Key{}, s).ReleaseLease(ctx, old); err != nil {
		t.Fatal(err)
	}
	thief, err := store.Inner(inside.Key{}, s).AcquireLease(ctx, "relay", "thief", time.Hour)
	if err != nil || thief.Token != old.Token+1 {
		t.Fatalf("take over: %+v %v", thief, err)
	}
	close(gate.release)
	bs.waitFor(t, "the refused batch", func(b []publish.BatchReport) bool { return len(b) == 1 })
	if rep := bs.all()[0]; !errors.Is(rep.Err, store.ErrStaleFence) || rep.Published != 0 {
		t.Errorf("batch under a lost lease: %+v", rep)
	}
	for _, o := range outboxEntries(t, s) {
		if !o.PublishedAt.IsZero() {
			t.Errorf("row %d marked by a relay that lost its lease", o.Position)
		}
	}
	eventually(t, "the relay to stand by", 10*time.Second, func() bool { return r.Stats().LeasesLost == 1 && r.Stats().LeaseToken == 0 })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	// The broker has the batch once; the new holder's republish dedupes.
	if n := len(srv.Messages(t, natsjs.DefaultStream)); n != 4 {
		t.Errorf("broker holds %d", n)
	}
}

// Two relays on one store: the second stands by, and takes over at once
// when the first stops cleanly.
func TestRelayStandbyTakesOverOnRelease(t *testing.T) {
	srv := natstest.RunJetStream(t, nil)
	s := storetest.MustOpen(t, nil)
	appendEvents(t, s, "default", "a", 3)
	bsA, bsB := newBatches(), newBatches()
	a := newRelay(t, publish.Options{Store: s, Publisher: newNATS(t, srv.URL(), natsjs.Options{}), Owner: "a", OnBatch: bsA.add})
	stopA := runRelay(t, a)
	bsA.waitFor(t, "a's first rows", published(3))
	b := newRelay(t, publish.Options{Store: s, Publisher: newNATS(t, srv.URL(), natsjs.Options{}), Owner: "b", LeaseTTL: time.Hour, RenewEvery: time.Minute, OnBatch: bsB.add})
	stopB := runRelay(t, b)
	appendEvents(t, s, "default", "a", 2)
	bsA.waitFor(t, "a's next rows", published(5))
	if len(bsB.all()) != 0 || b.Stats().LeaseToken != 0 {
		t.Fatalf("the standby worked while a held the lease")
	}
	if err := stopA(); err != nil {
		t.Fatal(err)
	}
	eventually(t, "b to take over", 10*time.Second, func() bool { return b.Stats().LeaseToken == 2 })
	appendEvents(t, s, "default", "a", 2)
	bsB.waitFor(t, "b's rows", published(2))
	if err := stopB(); err != nil {
		t.Fatal(err)
	}
	checkBroker(t, srv, s)
	for _, o := range outboxEntries(t, s) {
		want := int64(1)
		if o.Version > 5 {
			want = 2
		}
		if o.PublishedToken != want {
			t.Errorf("row %d (v%d) marked under token %d, want %d", o.Position, o.Version, o.PublishedToken, want)
		}
	}
}

// published is a batches condition: n rows published in all.
func published(n int) func([]publish.BatchReport) bool {
	return func(b []publish.BatchReport) bool {
		k := 0
		for _, r := range b {
			k += r.Published
		}
		return k == n
	}
}

// The stdout publisher drains the outbox as JSON Lines.
func TestRelayToStdout(t *testing.T) {
	s := storetest.MustOpen(t, nil)
	want := appendEvents(t, s, "default", "a", 3)
	var out bytes.Buffer
	r := newRelay(t, publish.Options{Store: s, Publisher: publish.NewStdout(&out), Once: true})
	if err := r.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != len(want) {
		t.Fatalf("%d lines", len(lines))
	}
	for i, l := range lines {
		e, err := envelope.DecodeJSON([]byte(l), -1)
		if err != nil || e.ID != want[i].ID || e.Position != want[i].Position {
			t.Errorf("line %d: %v %+v", i, err, e)
		}
	}
}
