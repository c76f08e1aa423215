package serve

import (
	"context"
	"encoding/json"
	"io"
	"iter"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/storetest"
)

// readRecord is one read of the log through the hub's seam: what it
// asked for and how many events it returned.
type readRecord struct {
	opts store.ReadAllOptions
	rows int
	last int64 // the position of its last event, 0 when it had none
}

// countReads wraps h's reads of the log; each read, once iterated,
// is kept and sent on the returned channel.
func countReads(h *Handler) (<-chan readRecord, func() []readRecord) {
	var mu sync.Mutex
	var all []readRecord
	done := make(chan readRecord, 1024)
	inner := h.hub.read
	h.hub.read = func(ctx context.Context, o store.ReadAllOptions) iter.Seq2[envelope.Event, error] {
		return func(yield func(envelope.Event, error) bool) {
			rec := readRecord{opts: o}
			defer func() {
				mu.Lock()
				all = append(all, rec)
				mu.Unlock()
				done <- rec
			}()
			for e, err := range inner(ctx, o) {
				if err == nil {
					rec.rows++
					rec.last = e.Position
				}
				if !yield(e, err) {
					return
				}
			}
		}
	}
	return done, func() []readRecord {
		mu.Lock()
		defer mu.Unlock()
		return append([]readRecord(nil), all...)
	}
}

// awaitRead waits for a read that ok accepts.
func awaitRead(t *testing.T, reads <-chan readRecord, what string, ok func(readRecord) bool) readRecord {
	t.Helper()
	for {
		select {
		case r := <-reads:
			if ok(r) {
				return r
			}
		case <-time.After(time.Minute):
			t.Fatalf("no %s", what)
		}
	}
}

// A long poll of tenant acme with a filter no index serves reads the log
// once; then it waits on the hub's feed: a commit of tenant beta (even
// one that matches the filter) and one of acme that does not match cause
// no read for it, and the hub reads each commit once, from the position
// after the last it read. The commit that matches answers the poll, with
// that event alone.
func TestLongPollReadsOnceAndWakesForItsTenant(t *testing.T) {
	s := storetest.MustOpen(t, nil)
	for range 3 {
		appendOne(t, s, "acme", "a")
	}
	head := appendOne(t, s, "beta", "b")
	h, url := hubServer(t, s, nil)
	reads, all := countReads(h)

	type answer struct {
		status int
		evs    []map[string]any
	}
	answered := make(chan answer, 1)
	go func() {
		res, err := http.Get(url + "/v1/tenants/acme/events?correlationid=x&wait=30")
		if err != nil {
			answered <- answer{status: -1}
			return
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		var evs []map[string]any
		_ = json.Unmarshal(b, &evs)
		answered <- answer{res.StatusCode, evs}
	}()
	awaitRead(t, reads, "read of the poll", func(r readRecord) bool {
		return r.opts.Tenant == "acme" && r.opts.CorrelationID == "x"
	})
	// Each commit below is read by the hub before the next is made.
	hubRead := func(pos int64) {
		t.Helper()
		awaitRead(t, reads, "read of the hub", func(r readRecord) bool { return r.opts.Tenant == "" && r.last == pos })
	}
	hubRead(appendOne(t, s, "beta", "x"))
	hubRead(appendOne(t, s, "acme", "y"))
	want := appendOne(t, s, "acme", "x")
	a := <-answered
	if a.status != 200 || len(a.evs) != 1 || a.evs[0]["position"] != jsonPosition(want) {
		t.Fatalf("the poll answered %d %v, want the event at position %d alone", a.status, a.evs, want)
	}

	var pollReads, hubRows int
	var hubNext int64
	for _, r := range all() {
		switch r.opts.Tenant {
		case "acme":
			pollReads++
		case "":
			// The hub starts after the head and reads on from where
			// its last read ended.
			if hubNext == 0 {
				hubNext = head + 1
			}
			if r.opts.From != hubNext {
				t.Errorf("a read of the hub from %d, want %d: %+v", r.opts.From, hubNext, r)
			}
			if r.rows > 0 {
				hubNext = r.last + 1
			}
			hubRows += r.rows
		default:
			t.Errorf("a read for tenant %q: %+v", r.opts.Tenant, r)
		}
	}
	if pollReads != 1 {
		t.Errorf("the poll read the log %d times, want once (the commits of beta and the one of acme that did not match woke it)", pollReads)
	}
	if hubRows != 3 {
		t.Errorf("the hub read %d events for 3 commits, want each once", hubRows)
	}
}

// jsonPosition is a position as the event JSON carries it.
func jsonPosition(p int64) string {
	b, _ := json.Marshal(struct {
		P int64 `json:"p,string"`
	}{p})
	var m map[string]string
	_ = json.Unmarshal(b, &m)
	return m["p"]
}

// The hub hands each tenant's subscribers that tenant's events alone: a
// commit of beta puts nothing in acme's feed.
func TestHubHandsEachTenantItsOwnCommits(t *testing.T) {
	ctx := context.Background()
	s := storetest.MustOpen(t, nil)
	h, _ := hubServer(t, s, nil)
	subA, err := h.hub.subscribe(ctx, "acme", hubBuffer)
	if err != nil {
		t.Fatal(err)
	}
	subB, err := h.hub.subscribe(ctx, "beta", hubBuffer)
	if err != nil {
		t.Fatal(err)
	}
	// One commit of two tenants' events in one batch of the hub, and one
	// commit of each alone.
	err = s.Update(ctx, func(tx *store.Tx) error {
		for _, tenant := range []string{"beta", "acme"} {
			if _, err := tx.Append(ctx, tenant, "s", store.Any, envelope.Event{Source: "/t", Type: "t"}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	appendOne(t, s, "beta", "")
	appendOne(t, s, "acme", "")
	for _, c := range []struct {
		sub    *subscription
		tenant string
	}{{subA, "acme"}, {subB, "beta"}} {
		var got int
		for got < 2 {
			for _, f := range <-c.sub.ch {
				if f.Tenant != c.tenant {
					t.Fatalf("%s's feed got an event of %s: %+v", c.tenant, f.Tenant, f.Event)
				}
				got++
			}
		}
		if got != 2 {
			t.Errorf("%s's feed got %d events, want 2", c.tenant, got)
		}
	}
}

// A long poll with the same filter as an earlier one that found nothing
// reads the log from where the earlier one's read ended, not from its
// from again: a filter no index serves scans each position once. Its
// answer is the same: the event that matches, committed later.
func TestLongPollReadsOnFromWhereAnEarlierOneFoundNothing(t *testing.T) {
	s := storetest.MustOpen(t, nil)
	for range 4 {
		appendOne(t, s, "acme", "a")
	}
	head := appendOne(t, s, "acme", "a")
	h, url := hubServer(t, s, nil)
	reads, _ := countReads(h)
	poll := func(ctx context.Context, answered chan<- []map[string]any) {
		req, _ := http.NewRequestWithContext(ctx, "GET", url+"/v1/tenants/acme/events?correlationid=x&wait=30", nil)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			answered <- nil
			return
		}
		defer res.Body.Close()
		var evs []map[string]any
		b, _ := io.ReadAll(res.Body)
		_ = json.Unmarshal(b, &evs)
		answered <- evs
	}
	isPoll := func(r readRecord) bool { return r.opts.Tenant == "acme" && r.opts.CorrelationID == "x" }

	ctx1, cancel1 := context.WithCancel(context.Background())
	first := make(chan []map[string]any, 1)
	go poll(ctx1, first)
	if r := awaitRead(t, reads, "read of the first poll", isPoll); r.opts.From != 0 {
		t.Fatalf("the first poll read from %d, want 0", r.opts.From)
	}
	// Two commits that do not match, seen by the hub.
	appendOne(t, s, "acme", "y")
	p := appendOne(t, s, "acme", "y")
	awaitRead(t, reads, "read of the hub", func(r readRecord) bool { return r.opts.Tenant == "" && r.last == p })

	second := make(chan []map[string]any, 1)
	go poll(context.Background(), second)
	if r := awaitRead(t, reads, "read of the second poll", isPoll); r.opts.From != head+1 {
		t.Fatalf("the second poll read from %d, want %d: positions 1 to %d were found empty already", r.opts.From, head+1, head)
	}
	cancel1()
	<-first
	want := appendOne(t, s, "acme", "x")
	if evs := <-second; len(evs) != 1 || evs[0]["position"] != jsonPosition(want) {
		t.Fatalf("the second poll answered %v, want the event at %d alone", evs, want)
	}
}

// What a wait that ran out found empty is remembered too, and a span is
// used only for a read from within it.
func TestEmptySpans(t *testing.T) {
	var e emptySpans
	k := spanKey(&store.ReadAllOptions{Tenant: "acme", CorrelationID: "x"})
	e.record(k, 0, 10)
	e.record(k, 11, 20) // a wait that ran out, after the read
	for _, c := range []struct{ from, want int64 }{{0, 21}, {1, 21}, {15, 21}, {20, 21}, {21, 21}, {30, 30}} {
		if got := e.skip(k, c.from); got != c.want {
			t.Errorf("skip from %d: %d, want %d", c.from, got, c.want)
		}
	}
	if got := e.skip(spanKey(&store.ReadAllOptions{Tenant: "acme", CorrelationID: "y"}), 0); got != 0 {
		t.Errorf("another filter skips to %d", got)
	}
	if got := e.skip(spanKey(&store.ReadAllOptions{Tenant: "beta", CorrelationID: "x"}), 0); got != 0 {
		t.Errorf("another tenant skips to %d", got)
	}
	e.record(k, 40, 50) // apart from the span: replaces it
	if got := e.skip(k, 5); got != 5 {
		t.Errorf("skip from 5 after another span: %d", got)
	}
	for i := range maxEmptySpans + 10 {
		e.record(spanKey(&store.ReadAllOptions{Tenant: "t", CorrelationID: string(rune('a' + i))}), 1, 2)
	}
	if n := len(e.spans); n > maxEmptySpans {
		t.Errorf("%d spans kept, want at most %d", n, maxEmptySpans)
	}
}
