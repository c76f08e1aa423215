package publish_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/eventlite/eventlite/publish"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/outbox"
	"github.com/eventlite/eventlite/store/storetest"
)

// faultSink is a CloudEvents HTTP sink (binary mode) on 127.0.0.1 that
// misbehaves for one event or one stream, and records, per round of the
// relay, what it saw.
type faultSink struct {
	url        string
	dropID     string // hijack and close the connection of this event id
	hangStream string // hang (until the client gives up) for this stream
	round      atomic.Int64

	mu        sync.Mutex
	delivered map[string]int // event id -> 2xx answers
	drops     int
	hangs     map[int64]int // round -> requests that hung in it
}

func newFaultSink(t *testing.T, dropID, hangStream string) *faultSink {
	t.Helper()
	s := &faultSink{dropID: dropID, hangStream: hangStream, delivered: map[string]int{}, hangs: map[int64]int{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(s.handle)}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	s.url = "http://" + ln.Addr().String() + "/events"
	return s
}

func (s *faultSink) handle(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodOptions {
		w.WriteHeader(http.StatusOK)
		return
	}
	id, stream := r.Header.Get("Ce-Id"), r.Header.Get("Ce-Subject")
	switch {
	case id == s.dropID:
		s.mu.Lock()
		s.drops++
		s.mu.Unlock()
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close()
		}
		return
	case stream == s.hangStream:
		s.mu.Lock()
		s.hangs[s.round.Load()]++
		s.mu.Unlock()
		<-r.Context().Done() // the client gave up and closed the connection
		return
	}
	s.mu.Lock()
	s.delivered[id]++
	s.mu.Unlock()
	w.WriteHeader(http.StatusAccepted)
}

func (s *faultSink) snapshot() (delivered map[string]int, drops int, hangs map[int64]int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delivered = make(map[string]int, len(s.delivered))
	for k, v := range s.delivered {
		delivered[k] = v
	}
	hangs = make(map[int64]int, len(s.hangs))
	for k, v := range s.hangs {
		hangs[k] = v
	}
	return delivered, s.drops, hangs
}

// fillOthers appends events to streams of two tenants and returns their
// ids.
func fillOthers(t *testing.T, s *store.Store, streams, each int) []string {
	t.Helper()
	var ids []string
	for i := range streams {
		for _, e := range appendEvents(t, s, []string{"default", "acme"}[i%2], fmt.Sprint("s", i), each) {
			ids = append(ids, e.ID)
		}
	}
	return ids
}

// runIsolated runs a Once relay over the sink with small batches and
// immediate retries, counting rounds into the sink, and returns the batch
// reports, the relay and Run's result.
func runIsolated(t *testing.T, s *store.Store, sink *faultSink, hopts publish.HTTPOptions, maxAttempts int) ([]publish.BatchReport, *publish.Relay, error) {
	t.Helper()
	hopts.URL = sink.url
	p, err := publish.NewHTTP(hopts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	bs := newBatches()
	r := newRelay(t, publish.Options{Store: s, Publisher: p, Once: true, BatchSize: 5, MaxAttempts: maxAttempts,
		RetryBase: time.Nanosecond, RetryMax: time.Nanosecond,
		OnBatch: func(rep publish.BatchReport) { sink.round.Add(1); bs.add(rep) }})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err = r.Run(ctx)
	return bs.all(), r, err
}

// checkRounds checks that in every round the destination counted as up
// and that every row read was settled in it but at most waiting rows of
// the troubled stream.
func checkRounds(t *testing.T, reps []publish.BatchReport, waiting int) {
	t.Helper()
	for i, rep := range reps {
		if rep.Down != nil || rep.Err != nil {
			t.Errorf("round %d: %+v: the destination was taken for down", i, rep)
		}
		if rep.Waiting > waiting || rep.Published+rep.Retrying+rep.DeadLettered+rep.Waiting != rep.Rows {
			t.Errorf("round %d: %+v: rows of other streams were held back", i, rep)
		}
	}
}

func checkDelivered(t *testing.T, delivered map[string]int, ids []string) {
	t.Helper()
	for _, id := range ids {
		if delivered[id] == 0 {
			t.Errorf("event %s of another stream was not delivered", id)
		}
	}
}

// An event that makes the sink drop the connection is the event's
// failure, not a sink that is down: its attempts count, it becomes a dead
// letter after the bound, and every other stream of every tenant is
// delivered in the round that read it. One worker (Concurrency 1) makes
// the order of requests fixed: the bad event goes first.
func TestRelayIsolatesEventThatDropsTheConnection(t *testing.T) {
	s := storetest.MustOpen(t, nil)
	bad := appendEvents(t, s, "default", "bad", 2)
	others := fillOthers(t, s, 6, 3)
	sink := newFaultSink(t, bad[0].ID, "")
	const maxAttempts = 3
	reps, r, err := runIsolated(t, s, sink, publish.HTTPOptions{Concurrency: 1}, maxAttempts)
	var inc *publish.IncompleteError
	if !errors.As(err, &inc) || inc.Pending != 1 || inc.Err != nil {
		t.Fatalf("run: %v; want only the bad stream's second event left, behind the dead letter", err)
	}
	dl, err := outbox.For(s).DeadLetters(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	if len(dl) != 1 || dl[0].EventID != bad[0].ID || dl[0].Attempts != maxAttempts || !strings.Contains(dl[0].Error, "closed the connection") {
		t.Fatalf("dead letters %+v: want %s after %d attempts", dl, bad[0].ID, maxAttempts)
	}
	delivered, drops, _ := sink.snapshot()
	if drops != maxAttempts {
		t.Errorf("the sink dropped %d connections, want one per attempt (%d)", drops, maxAttempts)
	}
	checkDelivered(t, delivered, others)
	checkRounds(t, reps, 1)
	if st := r.Stats(); st.Unreachable != 0 {
		t.Errorf("%d round(s) backed off as unreachable", st.Unreachable)
	}
}

// Alone in its rounds (no other request to succeed), the event is still
// told apart from a sink that is down: the sink answers a ping.
func TestRelayIsolatesEventThatDropsTheConnectionAlone(t *testing.T) {
	s := storetest.MustOpen(t, nil)
	bad := appendEvents(t, s, "default", "bad", 1)
	sink := newFaultSink(t, bad[0].ID, "")
	reps, r, err := runIsolated(t, s, sink, publish.HTTPOptions{}, 3)
	if err != nil {
		t.Fatalf("run: %v; want the outbox drained to one dead letter", err)
	}
	dl, err := outbox.For(s).DeadLetters(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	if len(dl) != 1 || dl[0].Attempts != 3 {
		t.Fatalf("dead letters %+v: want the event after 3 attempts", dl)
	}
	checkRounds(t, reps, 0)
	if st := r.Stats(); st.Unreachable != 0 {
		t.Errorf("%d round(s) backed off as unreachable", st.Unreachable)
	}
}

// A sink that hangs for one stream costs the others at most one request
// timeout per round: in each round at most one request hangs, and the
// other streams' rows read in it are delivered in it. The hanging
// stream's event counts its attempts and becomes a dead letter.
func TestRelayHangingStreamDelaysOthersOneTimeoutPerRound(t *testing.T) {
	s := storetest.MustOpen(t, nil)
	appendEvents(t, s, "default", "slow", 1)
	others := fillOthers(t, s, 6, 4)
	sink := newFaultSink(t, "", "slow")
	const maxAttempts = 3
	// The timeout only lets the test end soon; nothing is measured in time.
	reps, _, err := runIsolated(t, s, sink, publish.HTTPOptions{Timeout: 200 * time.Millisecond}, maxAttempts)
	if err != nil {
		t.Fatalf("run: %v; want the outbox drained to one dead letter", err)
	}
	dl, err := outbox.For(s).DeadLetters(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	if len(dl) != 1 || dl[0].Stream != "slow" || dl[0].Attempts != maxAttempts {
		t.Fatalf("dead letters %+v: want the slow stream's event after %d attempts", dl, maxAttempts)
	}
	delivered, _, hangs := sink.snapshot()
	total := 0
	for round, n := range hangs {
		if n > 1 {
			t.Errorf("round %d waited on %d hanging requests, want at most one", round, n)
		}
		total += n
	}
	if total != maxAttempts {
		t.Errorf("%d hanging requests, want one per attempt (%d)", total, maxAttempts)
	}
	checkDelivered(t, delivered, others)
	checkRounds(t, reps, 0)
}
