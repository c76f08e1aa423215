package scenario

import (
	"context"
	"errors"
	"fmt"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/projection"
	"github.com/eventlite/eventlite/replay"
	"github.com/eventlite/eventlite/store"
)

// ProjectionScenario is given events, then the read model as rows of a
// query, or then a quarantine. Each run applies the events twice: live,
// through a projection.Runner, and again through a rebuild
// (replay.Rebuild, from scratch), and both must agree with the
// expectation. Build it with Projection; end it with ThenRows or
// ThenQuarantined.
type ProjectionScenario struct {
	t     T
	reg   *envelope.Registry
	p     projection.Projection
	given []any
}

// Projection starts a scenario of p, whose given events reg encodes.
func Projection(t T, reg *envelope.Registry, p projection.Projection) *ProjectionScenario {
	return &ProjectionScenario{t: t, reg: reg, p: p}
}

// DefaultStream is the stream of a given value that names none, in the
// "default" tenant.
const DefaultStream = "stream-1"

// Given are the events, appended in order: Events (on any stream and
// tenant), values of registered Go types (on DefaultStream), or Stored
// events of an older schema version.
func (ps *ProjectionScenario) Given(events ...any) *ProjectionScenario {
	ps.given = append(ps.given, events...)
	return ps
}

// ThenRows runs the scenario and requires query, run on the read model
// after the runner caught up and again after the rebuild, to return
// exactly rows, in order (give the query an ORDER BY).
func (ps *ProjectionScenario) ThenRows(q string, rows ...Row) {
	ps.t.Helper()
	want := make([]Row, len(rows))
	for i, r := range rows {
		want[i] = normalize(r)
	}
	ps.run(func(ctx context.Context, r *run, s *store.Store, pos []int64) {
		r.t.Helper()
		if _, err := ps.live(ctx, s); err != nil {
			r.failf("live (runner): %s", ps.explain(err, pos))
			return
		}
		cols, live, err := query(ctx, s, q)
		if err != nil {
			r.fatal("query the read model: %v", err)
			return
		}
		if d := diffRows(cols, want, live); d != "" {
			r.failf("live (runner): %s:\n%s", q, indent(d, "  "))
		}
		if _, err := replay.Rebuild(ctx, s, ps.p, &replay.Options{FromScratch: true}); err != nil {
			r.failf("rebuild (replay): %s", ps.explain(err, pos))
			return
		}
		_, rebuilt, err := query(ctx, s, q)
		if err != nil {
			r.fatal("query the rebuilt read model: %v", err)
			return
		}
		if d := diffRowsAs(cols, live, rebuilt, "live", "rebuilt"); d != "" {
			r.failf("the rebuild (replay) disagrees with the live read model: %s:\n%s", q, indent(d, "  "))
		}
	})
}

// ThenQuarantined runs the scenario and requires the live runner to stop
// on the nth given event (from 1), quarantined with reason, and the
// rebuild to fail on the same event.
func (ps *ProjectionScenario) ThenQuarantined(n int, reason projection.QuarantineReason) {
	ps.t.Helper()
	if n < 1 || n > len(ps.given) {
		ps.t.Fatalf("scenario %s: ThenQuarantined(%d): there are %d given events, counted from 1", ps.t.Name(), n, len(ps.given))
		return
	}
	ps.run(func(ctx context.Context, r *run, s *store.Store, pos []int64) {
		r.t.Helper()
		want := pos[n-1]
		_, err := ps.live(ctx, s)
		var stopped *projection.StoppedError
		switch {
		case err == nil:
			r.failf("live (runner): expected a quarantine at given event %d (%s), the runner applied every event", n, ps.givenName(n))
			return
		case !errors.As(err, &stopped):
			r.failf("live (runner): expected a quarantine at given event %d (%s), got: %s", n, ps.givenName(n), ps.explain(err, pos))
			return
		case stopped.Position != want:
			r.failf("live (runner): expected a quarantine at given event %d (%s), got one at %s: %v", n, ps.givenName(n), ps.nameAt(stopped.Position, pos), stopped.Err)
		}
		open, err := projection.Quarantine(s).Open(ctx, ps.p.Name)
		if err != nil {
			r.fatal("list the quarantine: %v", err)
			return
		}
		found := false
		for _, q := range open {
			if q.Position == want {
				found = true
				if q.Reason != reason {
					r.failf("live (runner): given event %d (%s) quarantined: reason: expected %s, got %s (%s)", n, ps.givenName(n), reason, q.Reason, q.Error)
				}
			}
		}
		if !found && stopped.Position == want {
			r.failf("live (runner): stopped at given event %d, but the quarantine has no entry for it", n)
		}
		_, err = replay.Rebuild(ctx, s, ps.p, &replay.Options{FromScratch: true})
		var he *replay.HandlerError
		switch {
		case err == nil:
			r.failf("rebuild (replay): applied given event %d (%s), which the live runner quarantined", n, ps.givenName(n))
		case !errors.As(err, &he):
			r.failf("rebuild (replay): expected it to fail at given event %d (%s), got: %v", n, ps.givenName(n), err)
		case he.Position != want:
			r.failf("rebuild (replay): expected it to fail at given event %d (%s), it failed at %s: %v", n, ps.givenName(n), ps.nameAt(he.Position, pos), he.Err)
		}
	})
}

func (ps *ProjectionScenario) live(ctx context.Context, s *store.Store) (int64, error) {
	rn, err := projection.NewRunner(s, ps.p, &projection.RunnerOptions{Owner: "scenario"})
	if err != nil {
		return 0, err
	}
	return rn.CatchUp(ctx)
}

// explain names the given event an error of the runner or of the rebuild
// points at.
func (ps *ProjectionScenario) explain(err error, pos []int64) string {
	var stopped *projection.StoppedError
	var he *replay.HandlerError
	switch {
	case errors.As(err, &stopped):
		return fmt.Sprintf("stopped on %s, quarantined after %d attempts: %v", ps.nameAt(stopped.Position, pos), stopped.Attempts, stopped.Err)
	case errors.As(err, &he):
		return fmt.Sprintf("failed on %s: %v", ps.nameAt(he.Position, pos), he.Err)
	}
	return err.Error()
}

func (ps *ProjectionScenario) givenName(n int) string {
	e := asEvent(ps.given[n-1], "default", DefaultStream)
	return fmt.Sprintf("%s on %s/%s", describe(e.Data), e.Tenant, e.Stream)
}

func (ps *ProjectionScenario) nameAt(position int64, pos []int64) string {
	for i, p := range pos {
		if p == position {
			return fmt.Sprintf("given event %d (%s)", i+1, ps.givenName(i+1))
		}
	}
	return fmt.Sprintf("position %d", position)
}

func (ps *ProjectionScenario) run(fn func(ctx context.Context, r *run, s *store.Store, pos []int64)) {
	ps.t.Helper()
	if ps.reg == nil {
		ps.t.Fatalf("scenario %s: Projection needs the registry the given events are encoded with", ps.t.Name())
		return
	}
	if err := ps.p.Validate(); err != nil {
		ps.t.Fatalf("scenario %s: projection %q: %v", ps.t.Name(), ps.p.Name, err)
		return
	}
	what := fmt.Sprintf("projection %s given %s", ps.p.Name, countEvents(len(ps.given)))
	each(ps.t, what, func(ctx context.Context, r *run, s *store.Store) {
		r.t.Helper()
		pos := appendEvents(ctx, r, s, ps.reg, ps.given, "default", DefaultStream)
		if pos == nil && len(ps.given) > 0 {
			return
		}
		fn(ctx, r, s, pos)
	})
}
