package projection

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/eventlite/eventlite/store"
)

// WaitFor returns once the projection's checkpoint has reached position
// (read your writes: Append returns the position, the caller waits for the
// read model to include it). It wakes on commits instead of sleeping, and
// returns ctx's error when ctx ends first. It returns a *StuckError as soon
// as the projection cannot get there without a person: stopped on a
// quarantined event (at once, naming the event; errors.Is(err,
// ErrStopped)), or its lease held by a process on this host that is gone,
// once that lease expired and no runner took it over within one lease
// period (errors.Is(err, ErrOwnerGone)).
//
// Position 0 is nothing to wait for (aggregate.Result.LastPosition of a
// command that appended nothing): WaitFor returns nil at once, without
// reading the store. A negative position is an error.
//
// A projection WaitFor does not know fails at once with
// ErrUnknownProjection, naming those it knows (a misspelled name would
// otherwise wait until ctx ends). It knows a projection that a Runner
// was built for in this process on s (NewRunner records the name, so
// building a runner, starting it in a goroutine, appending and waiting
// never fails, even on a new database), and one the store has a record
// of (its runner ran once, in any process: Records(s).List).
func WaitFor(ctx context.Context, s *store.Store, projection string, position int64) error {
	switch {
	case position == 0:
		return nil
	case position < 0:
		return fmt.Errorf("wait for projection %s: position %d: want a position an append returned, or 0 for nothing to wait for", projection, position)
	}
	checked := false // the projection is known (checkKnown)
	for {
		changed := s.Changed()
		cp, err := Records(s).Checkpoint(ctx, projection)
		if err != nil {
			return err
		}
		if cp >= position {
			return nil
		}
		if !checked {
			if err := checkKnown(ctx, s, projection); err != nil {
				return err
			}
			checked = true
		}
		se, recheck, err := stuck(ctx, s, projection, position, cp)
		if err != nil {
			return err
		}
		if se != nil {
			return se
		}
		var ripe <-chan time.Time
		var t *time.Timer
		if recheck > 0 {
			t = time.NewTimer(recheck)
			ripe = t.C
		}
		select {
		case <-ctx.Done():
			err = fmt.Errorf("wait for projection %s to reach position %d (at %d): %w", projection, position, cp, ctx.Err())
		case <-changed:
		case <-ripe:
		}
		if t != nil {
			t.Stop()
		}
		if err != nil {
			return err
		}
	}
}

const rebuildLeasePrefix = "rebuild:"

// RebuildLeaseResource is the lease a replay of the projection holds while
// it rebuilds: one replay at a time, and Stats report "rebuilding" while
// it is held. It is not the projection's lease, which the live runner
// keeps meanwhile.
func RebuildLeaseResource(name string) string { return rebuildLeasePrefix + name }

// Stats describe one projection.
type Stats struct {
	Name        string `json:"name"`
	Checkpoint  int64  `json:"checkpoint,string"`
	Head        int64  `json:"head,string"`
	Lag         int64  `json:"lag"`    // positions behind the head
	Status      Status `json:"status"` // running, idle, stopped, rebuilding or orphaned
	Quarantined int    `json:"quarantined"`
	Detail      string `json:"detail,omitempty"`
}

// AllStats describes every projection the store knows.
func AllStats(ctx context.Context, s *store.Store) ([]Stats, error) {
	head, err := s.Head(ctx)
	if err != nil {
		return nil, err
	}
	recs, err := Records(s).List(ctx)
	if err != nil {
		return nil, err
	}
	// A replay holds the rebuild lease while it runs; a rebuild row without
	// a live lease was left by a replay that failed or was killed.
	leases, err := s.Leases().List(ctx)
	if err != nil {
		return nil, err
	}
	replaying := map[string]bool{}
	for _, l := range leases {
		if name, ok := strings.CutPrefix(l.Resource, rebuildLeasePrefix); ok && l.Owner != "" && !l.Expired {
			replaying[name] = true
		}
	}
	rebuilds, err := Rebuilds(s).List(ctx)
	if err != nil {
		return nil, err
	}
	left := map[string]Rebuild{}
	for _, rb := range rebuilds {
		left[rb.Projection] = rb
	}
	out := make([]Stats, 0, len(recs))
	for _, r := range recs {
		st := Stats{Name: r.Name, Checkpoint: r.Checkpoint, Head: head, Lag: max(head-r.Checkpoint, 0), Quarantined: r.Quarantined, Detail: r.Detail}
		if rb, ok := left[r.Name]; ok && !replaying[r.Name] && st.Detail == "" {
			st.Detail = fmt.Sprintf("an unfinished rebuild can resume at position %d (run the replay again)", rb.Checkpoint)
		}
		switch {
		case replaying[r.Name], r.Status == StatusRebuilding:
			st.Status = StatusRebuilding
		case r.Status == StatusStopped:
			st.Status = StatusStopped
		case r.Orphaned:
			st.Status = StatusOrphaned
			if st.Detail == "" {
				st.Detail = fmt.Sprintf("lease held by %s, a process on this host that is gone (expired %s ago): start a runner", r.LeaseOwner, r.LeaseExpiredFor.Round(time.Second))
			}
		case r.LeaseLive:
			st.Status = StatusRunning
		default:
			st.Status = StatusIdle
		}
		out = append(out, st)
	}
	return out, nil
}

// StatsFor describes one projection; store.ErrNotFound when it never ran.
func StatsFor(ctx context.Context, s *store.Store, name string) (Stats, error) {
	all, err := AllStats(ctx, s)
	if err != nil {
		return Stats{}, err
	}
	for _, st := range all {
		if st.Name == name {
			return st, nil
		}
	}
	return Stats{}, fmt.Errorf("projection %q: %w", name, store.ErrNotFound)
}
