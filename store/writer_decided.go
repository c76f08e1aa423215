package store

import (
	"errors"
	"fmt"

	"github.com/eventlite/eventlite/store/internal/driver"
)

// decidable reports whether the engine can decide the whole group
// (driver.GroupWriter): every request is an append whose events carry
// no erasure key (checkKeysLive reads each subject's key in the
// transaction, an answer the store needs before it writes): those go the
// savepoint way. Tags and an append condition are the engine's too: the
// statement that appends writes the tag rows and checks the condition.
func decidable(live []*request) bool {
	for _, r := range live {
		if r.fn != nil || r.a.aeads != nil || r.a.sealed != nil {
			return false
		}
	}
	return true
}

// runDecided runs a group of appends the engine decides: one round trip
// begins the transaction, sends every append, each one statement that
// checks and writes, in the group's order, and commits. When an append
// is refused, that round trip committed nothing, and a second one sends
// the group again without the COMMIT, each refused append now writing
// nothing and failing nothing; the store then works out what each
// refused append answers (a conflict, a retry of a stored append, a
// reused id) by reading in the same transaction, and commits. A group
// of appends that all hold is one round trip whatever its size.
//
// It reports false when the group is to run the slow way (runGroup's
// savepoint per request) with nothing of it done: a statement failed
// unexpectedly (the driver rolled back: the slow way gives that request
// its own error and its neighbours their commit), or the session was
// lost and a new connection taken.
func (s *Store) runDecided(gw driver.GroupWriter, live []*request) bool {
	now := s.opts.Now().UnixNano()
	bs := make([]driver.DecidedBatch, len(live))
	for i, r := range live {
		a := r.a
		lo, hi := a.expected.bounds()
		bs[i] = driver.DecidedBatch{EventBatch: driver.EventBatch{Tenant: a.tenant, Stream: a.stream, Events: a.events, RecordedAt: now}, Lo: lo, Hi: hi,
			Cond: a.cond, CondAfter: a.condAfter}
	}
	out := make([]driver.Decision, len(live))
	// First as a group whose appends all hold: with its COMMIT, one
	// round trip. When one is refused, nothing of the group committed,
	// and it goes again without its COMMIT, to find out why.
	failed, err := gw.AppendGroup(bg, bs, out, true)
	switch {
	case err == nil:
		for i, r := range live {
			r.res, r.err = s.decided(r.a, out[i])
			close(r.done)
		}
		s.notify()
		return true
	case failed == len(bs):
		// The COMMIT failed: as commit's failure, every request fails.
		err = fmt.Errorf("commit: %w", mapErr(err))
		for _, r := range live {
			r.res, r.err = AppendResult{}, err
			close(r.done)
		}
		return true
	case failed >= 0 && !s.connLost(err):
		failed, err = gw.AppendGroup(bg, bs, out, false)
	}
	if err != nil {
		if s.connLost(err) {
			// As runGroup's begin: a new connection, and the group tried
			// once more (the slow way).
			rerr := s.reconnectWriter()
			if rerr == nil {
				return false
			}
			err = fmt.Errorf("%w (reconnect: %v)", err, rerr)
		}
		if failed >= 0 {
			return false
		}
		err = fmt.Errorf("begin: %w", mapErr(err))
		for _, r := range live {
			r.err = err
			close(r.done)
		}
		return true
	}
	s.wconn.stmtCtx = bg
	defer func() { s.wconn.stmtCtx = nil }()
	ok := 0
	for i, r := range live {
		r.res, r.err = s.decided(r.a, out[i])
		switch {
		case errors.Is(r.err, errRetried):
			r.err = nil // the first append's result; this one wrote nothing
		case r.err == nil:
			ok++
		}
	}
	if ok == 0 {
		s.rollback()
	} else if err := s.commit(); err != nil {
		for _, r := range live {
			if r.err == nil {
				r.res, r.err = AppendResult{}, err
			}
		}
		ok = 0
	}
	for _, r := range live {
		close(r.done)
	}
	if ok > 0 {
		s.notify()
	}
	return true
}

// decided is what an append the engine decided answers: its result when
// the engine wrote it, else why not, found as appendLocked finds it.
func (s *Store) decided(a *appendReq, d driver.Decision) (AppendResult, error) {
	st := d.State
	if d.Inserted {
		for i := range a.events {
			a.events[i].StreamVersion = st.Version + int64(i) + 1
			a.events[i].Position = st.LastPosition + int64(i) + 1
		}
		return AppendResult{Tenant: a.tenant, Stream: a.stream, Version: st.Version + int64(len(a.events)), Events: a.events}, nil
	}
	checked := a
	if a.cond != nil && !d.CondFailed {
		// The condition held when the engine decided: the store's own
		// look now would also see the group's later appends.
		c := *a
		c.cond = nil
		checked = &c
	}
	if res, err := s.refusal(checked, st); err != nil {
		return res, err
	}
	// Every check of the state held: an id of the batch is stored in the
	// tenant, or a scavenge removed it.
	res, retry, err := s.retryResult(a, st.Version)
	switch {
	case err != nil:
		return AppendResult{}, err
	case retry:
		return res, errRetried
	}
	return AppendResult{}, &DuplicateError{Tenant: a.tenant, EventID: a.events[0].ID, Reason: "an event id of the batch is stored"}
}
