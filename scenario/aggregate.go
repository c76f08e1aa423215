package scenario

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/google/go-cmp/cmp"

	"github.com/eventlite/eventlite/aggregate"
	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/store"
)

// CommandHandler is what an aggregate scenario sends its command to:
// *aggregate.Handler[S] of any state type, or any other form of handler
// over the same store (AggregateOf).
type CommandHandler interface {
	Handle(ctx context.Context, cmd aggregate.Command) (aggregate.Result, error)
}

// AggregateScenario is given past events, when a command, then the new
// events, an error, or nothing. Build it with Aggregate or AggregateOf and
// end it with Then, ThenError or ThenNothing, which run it.
type AggregateScenario struct {
	t      T
	reg    *envelope.Registry
	handle func(*store.Store) (CommandHandler, error)
	given  []any
	cmd    aggregate.Command
	when   bool
	opts   cmp.Options
	stream string // the default stream
}

// Aggregate starts a scenario of the aggregate def describes, through an
// aggregate.Handler built on each scenario's store.
func Aggregate[S any](t T, def aggregate.Definition[S]) *AggregateScenario {
	a := AggregateOf(t, def.Registry, func(s *store.Store) (CommandHandler, error) {
		return aggregate.New(s, def, nil)
	})
	if def.Name != "" {
		a.stream = def.Name + "-1"
	}
	return a
}

// AggregateOf starts a scenario whose command goes to the handler
// newHandler builds on each scenario's store; reg decodes the events it
// appends (and encodes the given ones).
func AggregateOf(t T, reg *envelope.Registry, newHandler func(*store.Store) (CommandHandler, error)) *AggregateScenario {
	return &AggregateScenario{t: t, reg: reg, handle: newHandler, stream: "aggregate-1"}
}

// Given are the aggregate's past events, in order: values of registered
// Go types (on the command's stream), Events (on a stream of their own),
// or Stored events of an older schema version.
func (a *AggregateScenario) Given(events ...any) *AggregateScenario {
	a.given = append(a.given, events...)
	return a
}

// When is the command: an aggregate.Command, or a payload alone (sent as
// aggregate.Command{Payload: payload}). Its Stream defaults to
// "<aggregate>-1" ("aggregate-1" for AggregateOf), its Tenant to "default".
// A command with an OperationID is sent twice: the retry must return the
// first result and append nothing.
func (a *AggregateScenario) When(cmd any) *AggregateScenario {
	switch c := cmd.(type) {
	case aggregate.Command:
		a.cmd = c
	case *aggregate.Command:
		a.cmd = *c
	default:
		a.cmd = aggregate.Command{Payload: cmd}
	}
	a.when = true
	return a
}

// Options are go-cmp options for comparing the events' data
// (cmpopts.IgnoreFields, cmp.AllowUnexported, ...).
func (a *AggregateScenario) Options(opts ...cmp.Option) *AggregateScenario {
	a.opts = append(a.opts, opts...)
	return a
}

// Then runs the scenario and requires the command to append exactly these
// events, in order: values of registered Go types (on the command's
// stream) or Events. No events is the same as ThenNothing.
func (a *AggregateScenario) Then(events ...any) {
	a.t.Helper()
	a.run(func(r *run, got []gotEvent, err error) {
		if err != nil {
			r.failf("expected %s, got the error: %v", countEvents(len(events)), err)
			return
		}
		compareEvents(r, a.reg, a.wants(events), got, a.opts)
	})
}

// ThenNothing runs the scenario and requires the command to succeed and
// append nothing.
func (a *AggregateScenario) ThenNothing() {
	a.t.Helper()
	a.Then()
}

// ThenError runs the scenario and requires the command to fail, appending
// nothing, with an error that matches target: errors.Is when target is an
// error, errors.As when it is a pointer to an error type (which it then
// holds, for further checks).
func (a *AggregateScenario) ThenError(target any) {
	a.t.Helper()
	want, wantAs := "", false
	switch x := target.(type) {
	case error:
		want = fmt.Sprintf("an error matching %q (errors.Is)", x)
	default:
		rt := reflect.TypeOf(target)
		if rt == nil || rt.Kind() != reflect.Pointer || reflect.ValueOf(target).IsNil() {
			a.t.Fatalf("scenario %s: ThenError takes an error or a non-nil pointer to an error type, got %T", a.t.Name(), target)
			return
		}
		want, wantAs = fmt.Sprintf("an error of type %s (errors.As)", rt.Elem()), true
	}
	a.run(func(r *run, got []gotEvent, err error) {
		switch {
		case err == nil:
			r.failf("expected %s, got no error", want)
			if len(got) > 0 {
				r.failf("and the command appended %s", listGot(got))
			}
			return
		case wantAs && !errors.As(err, target):
			r.failf("expected %s, got %T: %v", want, err, err)
		case !wantAs && !errors.Is(err, target.(error)):
			r.failf("expected %s, got %T: %v", want, err, err)
		}
		if len(got) > 0 {
			r.failf("the command failed but appended %s", listGot(got))
		}
	})
}

// wants turns expected values into Events on the command's stream.
func (a *AggregateScenario) wants(events []any) []Event {
	out := make([]Event, len(events))
	for i, v := range events {
		out[i] = asEvent(v, a.cmd.Tenant, a.cmd.Stream)
	}
	return out
}

type gotEvent struct {
	env  envelope.Event
	data any
}

func (a *AggregateScenario) defaults() {
	if a.cmd.Tenant == "" {
		a.cmd.Tenant = "default"
	}
	if a.cmd.Stream == "" {
		a.cmd.Stream = a.stream
	}
}

func (a *AggregateScenario) run(check func(r *run, got []gotEvent, err error)) {
	a.t.Helper()
	if !a.when {
		a.t.Fatalf("scenario %s: no command: call When before Then", a.t.Name())
		return
	}
	if a.reg == nil {
		a.t.Fatalf("scenario %s: the aggregate has no Registry", a.t.Name())
		return
	}
	a.defaults()
	what := fmt.Sprintf("when %s on %s", describe(a.cmd.Payload), a.cmd.Stream)
	each(a.t, what, func(ctx context.Context, r *run, s *store.Store) {
		r.t.Helper()
		h, err := a.handle(s)
		if err != nil {
			r.fatal("build the handler: %v", err)
			return
		}
		if !a.appendGiven(ctx, r, s) {
			return
		}
		head, err := s.Head(ctx)
		if err != nil {
			r.fatal("read the head: %v", err)
			return
		}
		res, err := h.Handle(ctx, a.cmd)
		got, rerr := readAfter(ctx, s, a.reg, head)
		if rerr != nil {
			r.fatal("read the appended events: %v", rerr)
			return
		}
		check(r, got, err)
		if err != nil || a.cmd.OperationID == "" {
			return
		}
		// A retry of the operation returns the first result and appends
		// nothing.
		again, err := h.Handle(ctx, a.cmd)
		after, rerr := readAfter(ctx, s, a.reg, head)
		switch {
		case rerr != nil:
			r.fatal("read the appended events: %v", rerr)
		case err != nil:
			r.failf("the retry of operation %q failed: %v", a.cmd.OperationID, err)
		case len(after) != len(got):
			r.failf("the retry of operation %q appended %s", a.cmd.OperationID, listGot(after[len(got):]))
		case !again.Replayed || again.Version != res.Version || !reflect.DeepEqual(again.Positions, res.Positions):
			r.failf("the retry of operation %q did not return the first result: first version %d positions %v, retry version %d positions %v (replayed %t)",
				a.cmd.OperationID, res.Version, res.Positions, again.Version, again.Positions, again.Replayed)
		}
	})
}

// appendGiven appends the given events in order.
func (a *AggregateScenario) appendGiven(ctx context.Context, r *run, s *store.Store) bool {
	r.t.Helper()
	return appendEvents(ctx, r, s, a.reg, a.given, a.cmd.Tenant, a.cmd.Stream) != nil
}

// appendEvents appends given events one by one and returns their
// positions, or nil after a fatal report.
func appendEvents(ctx context.Context, r *run, s *store.Store, reg *envelope.Registry, given []any, tenant, stream string) []int64 {
	r.t.Helper()
	pos := make([]int64, 0, len(given))
	for i, v := range given {
		e := asEvent(v, tenant, stream)
		ev, err := envelopeOf(reg, e)
		if err == nil {
			var res store.AppendResult
			res, err = s.Append(ctx, e.Tenant, e.Stream, store.Any, ev)
			if err == nil {
				pos = append(pos, res.Positions()[0])
				continue
			}
		}
		r.fatal("given event %d: %v", i+1, err)
		return nil
	}
	return pos
}

// readAfter reads and decodes every event after position head.
func readAfter(ctx context.Context, s *store.Store, reg *envelope.Registry, head int64) ([]gotEvent, error) {
	var out []gotEvent
	for e, err := range s.ReadAll(ctx, store.ReadAllOptions{From: head + 1}) {
		if err != nil {
			return nil, err
		}
		d, err := reg.Decode(e)
		if err != nil {
			return nil, fmt.Errorf("event %s (%s): %w", e.ID, e.Type, err)
		}
		out = append(out, gotEvent{env: e, data: d})
	}
	return out, nil
}

func countEvents(n int) string {
	switch n {
	case 0:
		return "no events"
	case 1:
		return "1 event"
	}
	return fmt.Sprintf("%d events", n)
}

func listGot(got []gotEvent) string {
	var b strings.Builder
	b.WriteString(countEvents(len(got)) + ":")
	for i, g := range got {
		fmt.Fprintf(&b, "\n  %d. %s on %s: %s", i+1, g.env.Type, g.env.Stream, describe(g.data))
	}
	return b.String()
}

// compareEvents reports each difference between the expected and the
// appended events: which event, which attribute or field, expected and got.
func compareEvents(r *run, reg *envelope.Registry, want []Event, got []gotEvent, opts cmp.Options) {
	if len(want) != len(got) {
		r.failf("expected %s, got %s", countEvents(len(want)), countEvents(len(got)))
	}
	for i := 0; i < len(want) || i < len(got); i++ {
		n := i + 1
		if i >= len(got) {
			w := want[i]
			r.failf("event %d: expected %s on %s, got none", n, describe(w.Data), w.Stream)
			continue
		}
		g := got[i]
		if i >= len(want) {
			r.failf("event %d: expected none, got %s on %s: %s", n, g.env.Type, g.env.Stream, describe(g.data))
			continue
		}
		w := want[i]
		label := fmt.Sprintf("event %d (%s on %s)", n, g.env.Type, g.env.Stream)
		if wt, gt := reflect.TypeOf(w.Data), reflect.TypeOf(g.data); wt != gt {
			wantType, _ := reg.TypeOf(w.Data)
			r.failf("event %d: type: expected %s (%s), got %s (%s) on %s", n, wantType, describe(w.Data), g.env.Type, describe(g.data), g.env.Stream)
			continue
		}
		if w.Tenant != g.env.Tenant {
			r.failf("%s: tenant: expected %q, got %q", label, w.Tenant, g.env.Tenant)
		}
		if w.Stream != g.env.Stream {
			r.failf("%s: stream: expected %q, got %q", label, w.Stream, g.env.Stream)
		}
		for _, f := range []struct{ name, want, got string }{
			{"id", w.ID, g.env.ID},
			{"correlation id", w.CorrelationID, g.env.CorrelationID},
			{"causation id", w.CausationID, g.env.CausationID},
		} {
			if f.want != "" && f.want != f.got {
				r.failf("%s: %s: expected %q, got %q", label, f.name, f.want, f.got)
			}
		}
		if !w.Time.IsZero() && !w.Time.Equal(g.env.Time) {
			r.failf("%s: time: expected %s, got %s", label, w.Time, g.env.Time)
		}
		if diff, err := safeDiff(w.Data, g.data, opts); err != nil {
			r.failf("%s: cannot compare the data: %v", label, err)
		} else if diff != "" {
			r.failf("%s: data differs (-expected +got):\n%s", label, indent(diff, "  "))
		}
	}
}

// safeDiff is cmp.Diff, with its panic on unexported fields turned into an
// error that says what to pass.
func safeDiff(want, got any, opts cmp.Options) (diff string, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%v (pass cmp options, such as cmp.AllowUnexported, with Options)", p)
		}
	}()
	return strings.TrimRight(cmp.Diff(want, got, opts), "\n"), nil
}
