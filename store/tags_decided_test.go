package store

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/store/internal/driver"
)

// TestTaggedAndConditionalGroupDecidedByServer: a group of tagged and
// conditional appends, which on PostgreSQL the server decides in one
// round trip (driver.GroupWriter), the statement that appends writing
// the tag rows and checking the condition. Each request's condition sees
// the tags of the requests before it and not of those after it: one that
// an earlier request's event fails gets the *ConditionError naming it;
// one refused for a reused id, whose condition a later request's event
// would fail, is told apart as the reused id it is; a failed expectation
// stays a conflict. The tags are indexed as the slow way indexes them.
// The same group runs on SQLite (the slow way) with the same outcomes.
func TestTaggedAndConditionalGroupDecidedByServer(t *testing.T) {
	for name, s := range groupTestStores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			var largest *int
			if gw, ok := s.stmts.(driver.GroupWriter); ok {
				c := &countingGroupWriter{Writer: s.stmts, gw: gw}
				s.stmts, largest = c, &c.largest
				defer func() { s.stmts = c.Writer }()
			}
			if _, err := s.Append(ctx, "acme", "old", NoStream, tagEvent(t, "T", "taken", "x:old")); err != nil {
				t.Fatal(err)
			}
			q := func(tag string) Condition { return Condition{Query: Query{Items: []QueryItem{{Tags: []string{tag}}}}} }
			type req struct {
				name   string
				stream string
				exp    Expected
				events []envelope.Event
				check  func(error) bool
			}
			isCond := func(err error) bool { var ce *ConditionError; return errors.As(err, &ce) }
			isDup := func(err error) bool { var de *DuplicateError; return errors.As(err, &de) }
			isConflict := func(err error) bool { var ce *ConflictError; return errors.As(err, &ce) && !isCond(err) }
			reqs := []req{
				{"tagged", "a", NoStream, []envelope.Event{tagEvent(t, "T", "a1", "course:c1", "student:s1"), tagEvent(t, "T", "a2", "course:c1")}, nil},
				{"condition an earlier request fails", "b", Any.If(q("student:s1")), []envelope.Event{tagEvent(t, "T", "b1", "student:s1")}, isCond},
				{"condition that holds", "c", NoStream.If(q("student:s2")), []envelope.Event{tagEvent(t, "T", "c1", "student:s2", "course:c1")}, nil},
				{"reused id, a later request would fail the condition", "d", Any.If(q("course:c9")), []envelope.Event{tagEvent(t, "T", "taken")}, isDup},
				{"failed expectation with a condition", "a", Exact(7).If(q("nothing")), []envelope.Event{tagEvent(t, "T", "e1", "x:e")}, isConflict},
				{"tagged after", "f", Any, []envelope.Event{tagEvent(t, "T", "f1", "course:c9")}, nil},
			}
			var group []*request
			for _, r := range reqs {
				a, err := s.prepareAppend("acme", r.stream, r.exp, r.events)
				if err != nil {
					t.Fatal(err)
				}
				group = append(group, &request{ctx: ctx, a: a, done: make(chan struct{})})
			}
			s.w.mu.Lock()
			s.runGroup(group)
			s.w.mu.Unlock()
			for i, r := range group {
				<-r.done
				w := reqs[i]
				switch {
				case w.check == nil && r.err != nil:
					t.Errorf("%s: %v", w.name, r.err)
				case w.check != nil && !w.check(r.err):
					t.Errorf("%s: error %v, not the one wanted", w.name, r.err)
				}
			}
			var ce *ConditionError
			if errors.As(group[1].err, &ce) && (ce.EventID != "a1" || ce.Position != group[0].res.Events[0].Position) {
				t.Errorf("the failed condition names %s at %d, want a1 at %d", ce.EventID, ce.Position, group[0].res.Events[0].Position)
			}
			if largest != nil && *largest != len(reqs) {
				t.Errorf("the largest group the server decided held %d appends, want %d", *largest, len(reqs))
			}
			for tag, want := range map[string][]string{
				"course:c1":  {"a1", "a2", "c1"},
				"student:s1": {"a1"},
				"student:s2": {"c1"},
				"course:c9":  {"f1"},
				"x:e":        nil,
			} {
				got := queryIDs(t, s, ReadAllOptions{Tenant: "acme", Query: Query{Items: []QueryItem{{Tags: []string{tag}}}}})
				if !slices.Equal(got, want) {
					t.Errorf("events tagged %s: %v, want %v", tag, got, want)
				}
			}
			if err := s.CheckInvariants(ctx); err != nil {
				t.Error(err)
			}
		})
	}
}
