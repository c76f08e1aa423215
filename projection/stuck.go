package projection

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/eventlite/eventlite/store"
)

// ErrOwnerGone is wrapped by the *StuckError WaitFor returns when the
// projection's lease belongs to a process on this host that is gone and
// no runner took the lease over within one lease period after it
// expired: nothing will move the checkpoint until a runner starts.
var ErrOwnerGone = errors.New("projection's runner is gone and no runner took its lease over")

// StuckError says why WaitFor gave up before the checkpoint reached the
// position: the projection stopped on a quarantined event (Stopped is
// set; errors.Is(err, ErrStopped) holds) or its lease is orphaned (Owner
// is set; errors.Is(err, ErrOwnerGone) holds).
type StuckError struct {
	Projection string
	Position   int64 // the position waited for
	Checkpoint int64 // where the projection is
	// Stopped is the event the projection halted on.
	Stopped *StoppedError
	// Owner is the gone process that holds the orphaned lease, and
	// ExpiredFor how long ago that lease expired.
	Owner      string
	ExpiredFor time.Duration
}

func (e *StuckError) Error() string {
	prefix := fmt.Sprintf("wait for projection %s to reach position %d (at %d)", e.Projection, e.Position, e.Checkpoint)
	if e.Stopped != nil {
		return prefix + ": " + e.Stopped.Error()
	}
	return fmt.Sprintf("%s: its lease is held by %s, a process on this host that is gone; the lease expired %s ago and no runner took it over: start a runner (it takes the lease over)",
		prefix, e.Owner, e.ExpiredFor.Round(time.Millisecond))
}

// Unwrap lets errors.Is match ErrStopped (through the *StoppedError) or
// ErrOwnerGone.
func (e *StuckError) Unwrap() error {
	if e.Stopped != nil {
		return e.Stopped
	}
	return ErrOwnerGone
}

// stuck reports why the projection cannot reach position from cp, or,
// when it may still move, how long until the answer may change without a
// commit (an orphaned lease ripens with time; 0: only a commit changes
// it).
func stuck(ctx context.Context, s *store.Store, name string, position, cp int64) (*StuckError, time.Duration, error) {
	rec, err := Records(s).Get(ctx, name)
	if errors.Is(err, store.ErrNotFound) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, err
	}
	se := &StuckError{Projection: name, Position: position, Checkpoint: cp}
	switch {
	case rec.Status == StatusStopped:
		se.Stopped, err = stoppedAt(ctx, s, rec)
		return se, 0, err
	case rec.Orphaned:
		se.Owner, se.ExpiredFor = rec.LeaseOwner, rec.LeaseExpiredFor
		return se, 0, nil
	case rec.OwnerGone:
		return nil, rec.LeaseTTL - rec.LeaseExpiredFor + 10*time.Millisecond, nil
	}
	return nil, 0, nil
}

// stoppedAt rebuilds the *StoppedError of a stopped projection from its
// open quarantine entry: the first after its checkpoint.
func stoppedAt(ctx context.Context, s *store.Store, rec Record) (*StoppedError, error) {
	qs, err := Quarantine(s).Events(ctx, QuarantineFilter{Consumer: rec.Name, Open: true})
	if err != nil {
		return nil, err
	}
	var at *QuarantineEntry
	for i, q := range qs {
		if q.Position > rec.Checkpoint && (at == nil || q.Position < at.Position) {
			at = &qs[i]
		}
	}
	if at == nil {
		return &StoppedError{Projection: rec.Name, Position: rec.Checkpoint + 1, Err: errors.New(rec.Detail)}, nil
	}
	return &StoppedError{Projection: rec.Name, Position: at.Position, EventID: at.EventID, Attempts: at.Attempts, Err: errors.New(at.Error)}, nil
}
