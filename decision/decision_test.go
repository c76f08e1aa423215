package decision_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/eventlite/eventlite/decision"
	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/store"
)

// byTag reads the tenant's events carrying tag, in position order.
func byTag(t testing.TB, s *store.Store, tenant, tag string) []envelope.Event {
	t.Helper()
	var out []envelope.Event
	q := store.Query{Items: []store.QueryItem{{Tags: []string{tag}}}}
	for e, err := range s.ReadAll(context.Background(), store.ReadAllOptions{Tenant: tenant, Query: q}) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, e)
	}
	return out
}

func mustRegister(t testing.TB, s *store.Store) *decision.Handler[bool, RegisterUser] {
	t.Helper()
	h, err := NewRegisterUser(s, schoolRegistry())
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func mustSubscribe(t testing.TB, s *store.Store, opts *decision.Options) *decision.Handler[Subscription, SubscribeStudent] {
	t.Helper()
	h, err := NewSubscribeStudent(s, schoolRegistry(), opts)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// plainEvent is an untagged event of a type no decision here reads.
func plainEvent(t testing.TB) envelope.Event {
	t.Helper()
	e, err := envelope.New("noise.happened", map[string]int{"n": 1})
	if err != nil {
		t.Fatal(err)
	}
	e.Source = "/noise"
	return e
}

// registration is a user.registered event tagged as the decision tags
// it, appended behind the decision's back.
func registration(t testing.TB, reg *envelope.Registry, user, name string) envelope.Event {
	t.Helper()
	e, err := reg.Encode("user.registered", UserRegistered{UserID: user, Name: name})
	if err != nil {
		t.Fatal(err)
	}
	e.Tags = []string{"user:" + user, "username:" + name}
	return e
}

// TestRegisterUser: a name is taken once per tenant; the event goes to
// the stream the decision names, with its tags, causation and
// correlation ids; another tenant has names of its own.
func TestRegisterUser(t *testing.T) {
	onEngines(t, func(t *testing.T, eng engine) {
		ctx := context.Background()
		s, _ := eng.open(t, nil)
		h := mustRegister(t, s)
		res, err := h.Handle(ctx, decision.Command[RegisterUser]{ID: "cmd-1", CorrelationID: "corr-1", Payload: RegisterUser{"u1", "alice"}})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{"user-u1"}, res.Streams); diff != "" {
			t.Errorf("streams (-want +got):\n%s", diff)
		}
		_, err = h.Handle(ctx, decision.Command[RegisterUser]{Payload: RegisterUser{"u2", "alice"}})
		if !errors.Is(err, ErrNameTaken) {
			t.Fatalf("second alice: %v, want ErrNameTaken", err)
		}
		if _, err := h.Handle(ctx, decision.Command[RegisterUser]{Tenant: "other", Payload: RegisterUser{"u2", "alice"}}); err != nil {
			t.Fatalf("alice in another tenant: %v", err)
		}
		got := byTag(t, s, "default", "username:alice")
		if len(got) != 1 {
			t.Fatalf("%d events tagged username:alice, want 1", len(got))
		}
		e := got[0]
		want := struct{ Stream, Type, Causation, Correlation, Source string }{"user-u1", "user.registered", "cmd-1", "corr-1", "/school"}
		gotAttrs := struct{ Stream, Type, Causation, Correlation, Source string }{e.Stream, e.Type, e.CausationID, e.CorrelationID, e.Source}
		if diff := cmp.Diff(want, gotAttrs); diff != "" {
			t.Errorf("event (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]string{"user:u1", "username:alice"}, e.Tags); diff != "" {
			t.Errorf("tags (-want +got):\n%s", diff)
		}
		if e.Position != res.LastPosition() {
			t.Errorf("stored at %d, result says %d", e.Position, res.LastPosition())
		}
	})
}

// TestStaleDecisionIsDecidedAgain: an event matching the query that is
// appended between the read and the append fails the condition; the
// handler reads again and decides on what is there now. Nothing
// matching the query was there before (the condition is after the head
// then), and the log holds unrelated events before and in between.
func TestStaleDecisionIsDecidedAgain(t *testing.T) {
	onEngines(t, func(t *testing.T, eng engine) {
		ctx := context.Background()
		s, _ := eng.open(t, nil)
		reg := schoolRegistry()
		for range 3 {
			if _, err := s.Append(ctx, "default", "noise", store.Any, plainEvent(t)); err != nil {
				t.Fatal(err)
			}
		}
		var ev decision.Evolvers[bool]
		decision.On(&ev, func(_ bool, _ decision.EventOf[UserRegistered]) bool { return true })
		calls := 0
		def := decision.Definition[bool, RegisterUser]{
			Name: "register_user", Registry: reg, Evolvers: &ev,
			Query: func(c RegisterUser) store.Query {
				return store.Query{Items: []store.QueryItem{{Types: []string{"user.registered"}, Tags: []string{"username:" + c.Name}}}}
			},
			Decide: func(taken bool, c decision.Command[RegisterUser]) ([]decision.Event, error) {
				calls++
				if calls == 1 {
					// Someone else takes the name, and something unrelated
					// happens, after this decision read.
					if _, err := s.Append(ctx, "default", "noise", store.Any, plainEvent(t)); err != nil {
						t.Fatal(err)
					}
					if _, err := s.Append(ctx, "default", "user-rival", store.Any, registration(t, reg, "rival", c.Payload.Name)); err != nil {
						t.Fatal(err)
					}
				}
				if taken {
					return nil, ErrNameTaken
				}
				return []decision.Event{{Stream: "user-" + c.Payload.UserID, Tags: []string{"username:" + c.Payload.Name}, Payload: UserRegistered(c.Payload)}}, nil
			},
		}
		h, err := decision.New(s, def, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, err = h.Handle(ctx, decision.Command[RegisterUser]{Payload: RegisterUser{"u1", "alice"}})
		if !errors.Is(err, ErrNameTaken) {
			t.Fatalf("Handle: %v, want ErrNameTaken from the second attempt", err)
		}
		if calls != 2 {
			t.Errorf("Decide ran %d times, want 2", calls)
		}
		if got := byTag(t, s, "default", "username:alice"); len(got) != 1 || got[0].Stream != "user-rival" {
			t.Errorf("events tagged username:alice: %v, want the rival's only", got)
		}
	})
}

// TestUnrelatedAppendsDoNotConflict: events that do not match the query,
// appended between the read and the append (another name's
// registration, untagged events), leave the decision valid: it appends
// at the first attempt.
func TestUnrelatedAppendsDoNotConflict(t *testing.T) {
	onEngines(t, func(t *testing.T, eng engine) {
		ctx := context.Background()
		s, _ := eng.open(t, nil)
		reg := schoolRegistry()
		var ev decision.Evolvers[bool]
		decision.On(&ev, func(_ bool, _ decision.EventOf[UserRegistered]) bool { return true })
		calls := 0
		h, err := decision.New(s, decision.Definition[bool, RegisterUser]{
			Name: "register_user", Registry: reg, Evolvers: &ev,
			Query: func(c RegisterUser) store.Query {
				return store.Query{Items: []store.QueryItem{{Types: []string{"user.registered"}, Tags: []string{"username:" + c.Name}}}}
			},
			Decide: func(taken bool, c decision.Command[RegisterUser]) ([]decision.Event, error) {
				calls++
				for _, e := range []envelope.Event{plainEvent(t), registration(t, reg, "bob", "bob")} {
					if _, err := s.Append(ctx, "default", "elsewhere", store.Any, e); err != nil {
						t.Fatal(err)
					}
				}
				// The same tag in another tenant.
				if _, err := s.Append(ctx, "other", "user-x", store.Any, registration(t, reg, "x", c.Payload.Name)); err != nil {
					t.Fatal(err)
				}
				return []decision.Event{{Stream: "user-" + c.Payload.UserID, Tags: []string{"username:" + c.Payload.Name}, Payload: UserRegistered(c.Payload)}}, nil
			},
		}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := h.Handle(ctx, decision.Command[RegisterUser]{Payload: RegisterUser{"u1", "alice"}}); err != nil {
			t.Fatal(err)
		}
		if calls != 1 {
			t.Errorf("Decide ran %d times, want 1: an unrelated event failed the condition", calls)
		}
	})
}

// TestGivesUpAfterMaxAttempts: when the boundary moves at every attempt
// the handler stops after MaxAttempts, has appended nothing, and its
// error matches store.ErrConditionFailed.
func TestGivesUpAfterMaxAttempts(t *testing.T) {
	onEngines(t, func(t *testing.T, eng engine) {
		ctx := context.Background()
		s, _ := eng.open(t, nil)
		reg := schoolRegistry()
		var ev decision.Evolvers[int]
		decision.On(&ev, func(n int, _ decision.EventOf[CourseDefined]) int { return n + 1 })
		calls := 0
		h, err := decision.New(s, decision.Definition[int, RegisterUser]{
			Name: "busy", Registry: reg, Evolvers: &ev,
			Query: func(RegisterUser) store.Query {
				return store.Query{Items: []store.QueryItem{{Types: []string{"course.defined"}}}}
			},
			Decide: func(n int, c decision.Command[RegisterUser]) ([]decision.Event, error) {
				calls++
				if err := DefineCourse(ctx, s, reg, "default", fmt.Sprintf("c%d", calls), 1); err != nil {
					t.Fatal(err)
				}
				return []decision.Event{{Stream: "out", Payload: UserRegistered(c.Payload)}}, nil
			},
		}, &decision.Options{MaxAttempts: 4})
		if err != nil {
			t.Fatal(err)
		}
		_, err = h.Handle(ctx, decision.Command[RegisterUser]{Payload: RegisterUser{"u1", "alice"}})
		if !errors.Is(err, store.ErrConditionFailed) {
			t.Fatalf("Handle: %v, want store.ErrConditionFailed", err)
		}
		if calls != 4 {
			t.Errorf("Decide ran %d times, want 4", calls)
		}
		if v, _ := s.StreamVersion(ctx, "default", "out"); v != 0 {
			t.Errorf("stream out has version %d, want nothing appended", v)
		}
	})
}

// TestOperationIsIdempotent: a command retried with its operation id
// returns the first result and appends nothing, although the state
// changed (a decision made again would now be refused); the same id with
// another input is refused; concurrent retries execute once.
func TestOperationIsIdempotent(t *testing.T) {
	onEngines(t, func(t *testing.T, eng engine) {
		ctx := context.Background()
		s, _ := eng.open(t, nil)
		h := mustRegister(t, s)
		cmd := decision.Command[RegisterUser]{OperationID: "op-1", Payload: RegisterUser{"u1", "alice"}}
		first, err := h.Handle(ctx, cmd)
		if err != nil {
			t.Fatal(err)
		}
		again, err := h.Handle(ctx, cmd)
		if err != nil {
			t.Fatalf("retry: %v", err)
		}
		if !again.Replayed {
			t.Error("retry not marked Replayed")
		}
		again.Replayed = false
		if diff := cmp.Diff(first, again); diff != "" {
			t.Errorf("retry result (-first +retry):\n%s", diff)
		}
		_, err = h.Handle(ctx, decision.Command[RegisterUser]{OperationID: "op-1", Payload: RegisterUser{"u1", "alicia"}})
		if !errors.Is(err, store.ErrIdempotencyMismatch) {
			t.Errorf("same id, other input: %v, want ErrIdempotencyMismatch", err)
		}
		// Concurrent first executions of one operation: one executes.
		const n = 8
		var wg sync.WaitGroup
		results := make([]decision.Result, n)
		errs := make([]error, n)
		start := make(chan struct{})
		for i := range n {
			wg.Go(func() {
				<-start
				results[i], errs[i] = h.Handle(ctx, decision.Command[RegisterUser]{OperationID: "op-2", Payload: RegisterUser{"u2", "bob"}})
			})
		}
		close(start)
		wg.Wait()
		executed := 0
		for i := range n {
			if errs[i] != nil {
				t.Fatalf("writer %d: %v", i, errs[i])
			}
			if !results[i].Replayed {
				executed++
			}
			if results[i].LastPosition() != results[0].LastPosition() {
				t.Errorf("writer %d saw position %d, writer 0 %d", i, results[i].LastPosition(), results[0].LastPosition())
			}
		}
		if executed != 1 {
			t.Errorf("op-2 executed %d times, want 1", executed)
		}
		if got := byTag(t, s, "default", "username:bob"); len(got) != 1 {
			t.Errorf("%d registrations of bob, want 1", len(got))
		}
	})
}

// TestEventsOfOneDecisionCommitTogether: a decision's events go to the
// streams they name, in order, in one transaction; when one of them is
// refused (a stream only the store writes), none is stored.
func TestEventsOfOneDecisionCommitTogether(t *testing.T) {
	onEngines(t, func(t *testing.T, eng engine) {
		ctx := context.Background()
		s, _ := eng.open(t, nil)
		reg := schoolRegistry()
		var ev decision.Evolvers[int]
		decision.On(&ev, func(n int, _ decision.EventOf[UserRegistered]) int { return n + 1 })
		streams := []string{"a", "b", "a"}
		h, err := decision.New(s, decision.Definition[int, RegisterUser]{
			Name: "fan_out", Registry: reg, Evolvers: &ev,
			Query: func(c RegisterUser) store.Query {
				return store.Query{Items: []store.QueryItem{{Tags: []string{"batch:" + c.Name}}}}
			},
			Decide: func(n int, c decision.Command[RegisterUser]) ([]decision.Event, error) {
				var out []decision.Event
				for i, st := range streams {
					out = append(out, decision.Event{Stream: st, Tags: []string{"batch:" + c.Payload.Name}, Payload: UserRegistered{UserID: fmt.Sprint(i), Name: c.Payload.Name}})
				}
				return out, nil
			},
		}, nil)
		if err != nil {
			t.Fatal(err)
		}
		res, err := h.Handle(ctx, decision.Command[RegisterUser]{Payload: RegisterUser{Name: "one"}})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(streams, res.Streams); diff != "" {
			t.Errorf("streams (-want +got):\n%s", diff)
		}
		got := byTag(t, s, "default", "batch:one")
		var ids []string
		for _, e := range got {
			ids = append(ids, e.Stream+"/"+strings.Trim(string(e.Data), "{}"))
		}
		want := []string{`a/"user_id":"0","name":"one"`, `b/"user_id":"1","name":"one"`, `a/"user_id":"2","name":"one"`}
		if diff := cmp.Diff(want, ids); diff != "" {
			t.Errorf("stored (-want +got):\n%s", diff)
		}
		head, _ := s.Head(ctx)
		streams = []string{"a", "b", store.ReservedStreamPrefix + "x"}
		if _, err := h.Handle(ctx, decision.Command[RegisterUser]{Payload: RegisterUser{Name: "two"}}); err == nil {
			t.Fatal("a decision with an event for a reserved stream was appended")
		}
		if after, _ := s.Head(ctx); after != head {
			t.Errorf("head moved from %d to %d: part of a refused decision was stored", head, after)
		}
	})
}

// TestDecideErrorAppendsNothing: Decide's error comes back unchanged and
// nothing is stored or recorded: a retry with the same operation id runs
// the decision again.
func TestDecideErrorAppendsNothing(t *testing.T) {
	onEngines(t, func(t *testing.T, eng engine) {
		ctx := context.Background()
		s, _ := eng.open(t, nil)
		reg := schoolRegistry()
		sub := mustSubscribe(t, s, nil)
		cmd := decision.Command[SubscribeStudent]{OperationID: "sub-1", Payload: SubscribeStudent{"s1", "c1"}}
		if _, err := sub.Handle(ctx, cmd); !errors.Is(err, ErrNoCourse) {
			t.Fatalf("no course: %v, want ErrNoCourse", err)
		}
		if err := DefineCourse(ctx, s, reg, "default", "c1", 1); err != nil {
			t.Fatal(err)
		}
		res, err := sub.Handle(ctx, cmd)
		if err != nil || res.Replayed {
			t.Fatalf("after the course exists: %+v, %v; want executed now", res, err)
		}
	})
}

// TestUnfoldableEventFails: an event the query matches whose type has no
// evolver fails the decision with a *DefinitionError; nothing is
// appended.
func TestUnfoldableEventFails(t *testing.T) {
	ctx := context.Background()
	s, _ := engines[0].open(t, nil)
	reg := schoolRegistry()
	var ev decision.Evolvers[bool]
	decision.On(&ev, func(_ bool, _ decision.EventOf[UserRegistered]) bool { return true })
	h, err := decision.New(s, decision.Definition[bool, RegisterUser]{
		Name: "loose", Registry: reg, Evolvers: &ev,
		Query: func(c RegisterUser) store.Query {
			return store.Query{Items: []store.QueryItem{{Tags: []string{"course:" + c.Name}}}}
		},
		Decide: func(bool, decision.Command[RegisterUser]) ([]decision.Event, error) {
			return []decision.Event{{Stream: "out", Payload: UserRegistered{}}}, nil
		},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := DefineCourse(ctx, s, reg, "default", "c1", 3); err != nil {
		t.Fatal(err)
	}
	_, err = h.Handle(ctx, decision.Command[RegisterUser]{Payload: RegisterUser{Name: "c1"}})
	var de *decision.DefinitionError
	if !errors.As(err, &de) || !strings.Contains(err.Error(), "course.defined") {
		t.Fatalf("Handle: %v, want a *DefinitionError naming course.defined", err)
	}
	if v, _ := s.StreamVersion(ctx, "default", "out"); v != 0 {
		t.Errorf("appended although the fold failed")
	}
}

// TestNewChecksTheDefinition: New refuses what would fail later.
func TestNewChecksTheDefinition(t *testing.T) {
	s, _ := engines[0].open(t, nil)
	reg := schoolRegistry()
	query := func(RegisterUser) store.Query {
		return store.Query{Items: []store.QueryItem{{Types: []string{"user.registered"}}}}
	}
	decide := func(bool, decision.Command[RegisterUser]) ([]decision.Event, error) { return nil, nil }
	good := func() *decision.Evolvers[bool] {
		var ev decision.Evolvers[bool]
		decision.On(&ev, func(_ bool, _ decision.EventOf[UserRegistered]) bool { return true })
		return &ev
	}
	type unregistered struct{}
	for _, c := range []struct {
		name string
		def  decision.Definition[bool, RegisterUser]
		want string
	}{
		{"no name", decision.Definition[bool, RegisterUser]{Registry: reg, Query: query, Evolvers: good(), Decide: decide}, "Name is required"},
		{"no registry", decision.Definition[bool, RegisterUser]{Name: "d", Query: query, Evolvers: good(), Decide: decide}, "Registry"},
		{"no query", decision.Definition[bool, RegisterUser]{Name: "d", Registry: reg, Evolvers: good(), Decide: decide}, "Query"},
		{"no evolvers", decision.Definition[bool, RegisterUser]{Name: "d", Registry: reg, Query: query, Decide: decide}, "Evolvers"},
		{"no decide", decision.Definition[bool, RegisterUser]{Name: "d", Registry: reg, Query: query, Evolvers: good()}, "Decide"},
		{"empty evolvers", decision.Definition[bool, RegisterUser]{Name: "d", Registry: reg, Query: query, Evolvers: &decision.Evolvers[bool]{}, Decide: decide}, "no evolver"},
		{"unregistered evolver", decision.Definition[bool, RegisterUser]{Name: "d", Registry: reg, Query: query, Decide: decide, Evolvers: func() *decision.Evolvers[bool] {
			ev := good()
			decision.On(ev, func(b bool, _ decision.EventOf[unregistered]) bool { return b })
			return ev
		}()}, "never called"},
		{"two evolvers", decision.Definition[bool, RegisterUser]{Name: "d", Registry: reg, Query: query, Decide: decide, Evolvers: func() *decision.Evolvers[bool] {
			ev := good()
			decision.On(ev, func(b bool, _ decision.EventOf[UserRegistered]) bool { return b })
			return ev
		}()}, "a second evolver"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := decision.New(s, c.def, nil)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("New: %v, want an error containing %q", err, c.want)
			}
		})
	}
	if _, err := decision.New(s, decision.Definition[bool, RegisterUser]{Name: "d", Registry: reg, Query: query, Evolvers: good(), Decide: decide}, &decision.Options{MaxAttempts: -1}); err == nil {
		t.Error("New took a negative MaxAttempts")
	}
}
