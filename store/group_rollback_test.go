package store

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/eventlite/eventlite/envelope"
)

// TestGroupTransactionRolledBackUnderIt: when the engine rolls a group's
// whole transaction back after one request failed (SQLite does on a full
// disk or an I/O error; the test has a closure roll the transaction back
// through the writer and fail, as such a statement would), every request of the group fails, retryable,
// and nothing of it is stored: neither the appends that ran before, whose
// writes the rollback took, nor those after, which would otherwise have
// run outside any transaction, each committing alone while reported
// failed. The store writes on afterwards.
func TestGroupTransactionRolledBackUnderIt(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "g.db"), &Options{Synchronous: "NORMAL"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ev := func(id string) envelope.Event {
		return envelope.Event{ID: id, Source: "/test", Type: "t.happened"}
	}
	if _, err := s.Append(ctx, "acme", "s0", NoStream, ev("setup")); err != nil {
		t.Fatal(err)
	}
	errIO := errors.New("disk I/O error")
	g := &handGroup{t: t, s: s, ctx: ctx}
	before := g.append("s0", ev("before"))
	lost := g.add(&request{fn: func(tx *Tx) error {
		if _, err := tx.Append(ctx, "acme", "s1", Any, ev("in-closure")); err != nil {
			return err
		}
		// What the engine does on a full disk or an I/O error. (A
		// caller's own ROLLBACK is refused: TestTxControlRefused.)
		if err := s.stmts.Rollback(ctx); err != nil {
			return err
		}
		return errIO
	}})
	after := g.append("s2", ev("after"))
	afterNew := g.append("s3", ev("after-new"))
	g.run()
	if !errors.Is(lost.err, errIO) {
		t.Errorf("the failing closure: %v, want its own error", lost.err)
	}
	for name, r := range map[string]*request{"before": before, "after": after, "after-new": afterNew} {
		if !errors.Is(r.err, ErrBusy) {
			t.Errorf("append %q: %v, want ErrBusy (its group's transaction was rolled back)", name, r.err)
		}
	}
	for _, id := range []string{"before", "in-closure", "after", "after-new"} {
		if e, err := s.EventByID(ctx, "acme", id); err == nil {
			t.Errorf("event %q is stored at position %d; its group failed", id, e.Position)
		} else if !errors.Is(err, ErrNotFound) {
			t.Fatal(err)
		}
	}
	r, err := s.Append(ctx, "acme", "s2", NoStream, ev("after"))
	if err != nil {
		t.Fatalf("the retried append: %v", err)
	}
	if r.FirstPosition() != 2 {
		t.Errorf("the retried append took position %d, want 2", r.FirstPosition())
	}
	if err := s.CheckInvariants(ctx); err != nil {
		t.Error(err)
	}
}

// handGroup builds a group commit by hand: requests that the writer runs
// in one transaction (run), as it would requests queued together.
type handGroup struct {
	t    *testing.T
	s    *Store
	ctx  context.Context
	reqs []*request
}

// add queues r.
func (g *handGroup) add(r *request) *request {
	r.ctx, r.done = g.ctx, make(chan struct{})
	g.reqs = append(g.reqs, r)
	return r
}

// append queues an append of evs to stream (tenant acme, Any).
func (g *handGroup) append(stream string, evs ...envelope.Event) *request {
	g.t.Helper()
	a, err := g.s.prepareAppend("acme", stream, Any, evs)
	if err != nil {
		g.t.Fatal(err)
	}
	return g.add(&request{a: a})
}

// run runs the queued requests as one group and waits for them all.
func (g *handGroup) run() {
	g.s.w.mu.Lock()
	g.s.runGroup(g.reqs)
	g.s.w.mu.Unlock()
	for _, r := range g.reqs {
		<-r.done
	}
}
