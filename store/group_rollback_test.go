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
	var group []*request
	add := func(r *request) *request {
		r.ctx, r.done = ctx, make(chan struct{})
		group = append(group, r)
		return r
	}
	appendReq := func(stream, id string) *request {
		a, err := s.prepareAppend("acme", stream, Any, []envelope.Event{ev(id)})
		if err != nil {
			t.Fatal(err)
		}
		return add(&request{a: a})
	}
	before := appendReq("s0", "before")
	lost := add(&request{fn: func(tx *Tx) error {
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
	after := appendReq("s2", "after")
	afterNew := appendReq("s3", "after-new")

	s.w.mu.Lock()
	s.runGroup(group)
	s.w.mu.Unlock()

	for _, r := range group {
		<-r.done
	}
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
