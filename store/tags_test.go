package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/eventlite/eventlite/envelope"
)

// tagEvent is an event of type typ with id and tags.
func tagEvent(t *testing.T, typ, id string, tags ...string) envelope.Event {
	t.Helper()
	e, err := envelope.New(typ, map[string]string{"id": id})
	if err != nil {
		t.Fatal(err)
	}
	e.ID, e.Source, e.Tags = id, "/test", tags
	return e
}

// hostileTags are tags that must round-trip byte for byte: the
// separator, the escape, both at the ends and doubled, non-ASCII text.
var hostileTags = []string{`a,b`, `\`, `\,`, `,`, `,,x\\`, `course:c1`, `ünï ćode`, `x\`, `"quoted"`}

// TestTagsRoundTrip: tags come back from every read byte for byte, in
// the caller's order, separator and escape included.
func TestTagsRoundTrip(t *testing.T) {
	for name, s := range groupTestStores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			e := tagEvent(t, "t", "e1", hostileTags...)
			e.Extensions = map[string]any{"other": "x"}
			e2 := tagEvent(t, "t", "e2", "only")
			res, err := s.Append(ctx, "acme", "s", NoStream, e, e2)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(res.Events[0].Tags, hostileTags) {
				t.Errorf("append result tags %q", res.Events[0].Tags)
			}
			check := func(how string, got envelope.Event) {
				t.Helper()
				want := hostileTags
				if got.ID == "e2" {
					want = []string{"only"}
				}
				if !slices.Equal(got.Tags, want) {
					t.Errorf("%s: %s tags %q, want %q", how, got.ID, got.Tags, want)
				}
				if _, ok := got.Extensions[envelope.ExtTags]; ok {
					t.Errorf("%s: tags left in Extensions: %v", how, got.Extensions)
				}
			}
			for ev, err := range s.ReadStream(ctx, "acme", "s", ReadStreamOptions{}) {
				if err != nil {
					t.Fatal(err)
				}
				check("ReadStream", ev)
			}
			for ev, err := range s.ReadAll(ctx, ReadAllOptions{Tenant: "acme"}) {
				if err != nil {
					t.Fatal(err)
				}
				check("ReadAll", ev)
			}
			got, err := s.EventByID(ctx, "acme", "e1")
			if err != nil {
				t.Fatal(err)
			}
			check("EventByID", got)
			if got.Extensions["other"] != "x" {
				t.Errorf("other extension lost: %v", got.Extensions)
			}
			// The CloudEvent and JSON forms carry them too.
			back, err := envelope.FromCloudEvent(got.ToCloudEvent(), 0)
			if err != nil {
				t.Fatal(err)
			}
			check("CloudEvent", back)
			j, _ := got.MarshalJSON()
			back, err = envelope.DecodeJSON(j, 0)
			if err != nil {
				t.Fatal(err)
			}
			check("JSON", back)
			// Read by each tag finds it.
			for _, tag := range hostileTags {
				n := 0
				for ev, err := range s.ReadAll(ctx, ReadAllOptions{Tenant: "acme", Query: Query{Items: []QueryItem{{Tags: []string{tag}}}}}) {
					if err != nil {
						t.Fatal(err)
					}
					if ev.ID != "e1" {
						t.Errorf("tag %q read %s", tag, ev.ID)
					}
					n++
				}
				if n != 1 {
					t.Errorf("tag %q read %d events, want 1", tag, n)
				}
			}
		})
	}
}

// TestHostileTagsRefused: tags that are empty, hold control characters or
// invalid UTF-8, start or end with white space, repeat, or pass the
// limits are refused with a typed error naming the field, and nothing is
// stored.
func TestHostileTagsRefused(t *testing.T) {
	long := string(make([]byte, envelope.MaxTagBytes+1))
	for i := range []byte(long) {
		_ = i
	}
	longTag := ""
	for range envelope.MaxTagBytes + 1 {
		longTag += "x"
	}
	many := make([]string, envelope.MaxTags+1)
	for i := range many {
		many[i] = fmt.Sprint("t", i)
	}
	cases := map[string][]string{
		"empty":           {""},
		"NUL":             {"a\x00b"},
		"newline":         {"a\nb"},
		"DEL":             {"a\x7f"},
		"C1 control":      {"a\u0085"},
		"invalid UTF-8":   {"a\xffb"},
		"leading space":   {" a"},
		"trailing tab":    {"a\t"},
		"repeated":        {"a", "b", "a"},
		"too long":        {longTag},
		"too many":        many,
		"second is empty": {"ok", ""},
	}
	for name, s := range groupTestStores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			for cname, tags := range cases {
				e := tagEvent(t, "t", "h-"+cname, tags...)
				_, err := s.Append(ctx, "acme", "hostile", Any, e)
				var ie *envelope.InvalidError
				var te *envelope.TooLargeError
				switch {
				case errors.As(err, &ie):
					if ie.Field != "tags" {
						t.Errorf("%s: field %q, want tags (%v)", cname, ie.Field, err)
					}
				case errors.As(err, &te):
					if te.Field != "tags" {
						t.Errorf("%s: field %q, want tags (%v)", cname, te.Field, err)
					}
				default:
					t.Errorf("%s: %v, want an invalid or too-large error", cname, err)
				}
			}
			if v, err := s.StreamVersion(ctx, "acme", "hostile"); err != nil || v != 0 {
				t.Errorf("stream hostile at version %d (%v): a refused append stored events", v, err)
			}
			var tags int
			if err := s.rdb.QueryRowContext(ctx, `SELECT count(*) FROM event_tags`).Scan(&tags); err != nil {
				t.Fatal(err)
			}
			if tags != 0 {
				t.Errorf("%d tag rows after refused appends", tags)
			}
		})
	}
}

// queryIDs reads the ids of the events opts selects.
func queryIDs(t *testing.T, s *Store, opts ReadAllOptions) []string {
	t.Helper()
	var out []string
	for ev, err := range s.ReadAll(context.Background(), opts) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, ev.ID)
	}
	return out
}

// TestReadByQuery: the specification's matching (an item: one of its
// types, all of its tags; the query: any item), per tenant, from a
// position, forward and backward, with a limit; truncated and deleted
// events do not match.
func TestReadByQuery(t *testing.T) {
	for name, s := range groupTestStores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			app := func(tenant, stream string, evs ...envelope.Event) AppendResult {
				t.Helper()
				r, err := s.Append(ctx, tenant, stream, Any, evs...)
				if err != nil {
					t.Fatal(err)
				}
				return r
			}
			app("acme", "c1", tagEvent(t, "CourseDefined", "a1", "course:c1"),
				tagEvent(t, "StudentSubscribed", "a2", "course:c1", "student:s1"))
			app("acme", "c2", tagEvent(t, "CourseDefined", "a3", "course:c2"),
				tagEvent(t, "StudentSubscribed", "a4", "course:c2", "student:s1"),
				tagEvent(t, "StudentSubscribed", "a5", "course:c2", "student:s2"))
			app("other", "c1", tagEvent(t, "CourseDefined", "b1", "course:c1"))
			app("acme", "u", tagEvent(t, "Untagged", "a6"))
			q := func(items ...QueryItem) ReadAllOptions {
				return ReadAllOptions{Tenant: "acme", Query: Query{Items: items}}
			}
			cases := []struct {
				name string
				opts ReadAllOptions
				want []string
			}{
				{"one tag", q(QueryItem{Tags: []string{"course:c1"}}), []string{"a1", "a2"}},
				{"two tags", q(QueryItem{Tags: []string{"course:c2", "student:s1"}}), []string{"a4"}},
				{"type and tag", q(QueryItem{Types: []string{"StudentSubscribed"}, Tags: []string{"student:s1"}}), []string{"a2", "a4"}},
				{"types only", q(QueryItem{Types: []string{"CourseDefined", "Untagged"}}), []string{"a1", "a3", "a6"}},
				{"two items", q(QueryItem{Types: []string{"CourseDefined"}, Tags: []string{"course:c2"}},
					QueryItem{Tags: []string{"student:s2"}}), []string{"a3", "a5"}},
				{"overlapping items once", q(QueryItem{Tags: []string{"course:c1"}}, QueryItem{Tags: []string{"student:s1"}}), []string{"a1", "a2", "a4"}},
				{"unknown tag", q(QueryItem{Tags: []string{"nope"}}), nil},
				{"type not there", q(QueryItem{Types: []string{"Nope"}, Tags: []string{"course:c1"}}), nil},
			}
			for _, c := range cases {
				if got := queryIDs(t, s, c.opts); !slices.Equal(got, c.want) {
					t.Errorf("%s: %v, want %v", c.name, got, c.want)
				}
				back := c.opts
				back.Backward = true
				want := slices.Clone(c.want)
				slices.Reverse(want)
				if got := queryIDs(t, s, back); !slices.Equal(got, want) {
					t.Errorf("%s backward: %v, want %v", c.name, got, want)
				}
			}
			// From and Limit, forward and backward.
			all := q(QueryItem{Tags: []string{"course:c2"}})
			a4, err := s.EventByID(ctx, "acme", "a4")
			if err != nil {
				t.Fatal(err)
			}
			from := all
			from.From = a4.Position
			if got := queryIDs(t, s, from); !slices.Equal(got, []string{"a4", "a5"}) {
				t.Errorf("from a4: %v", got)
			}
			from.Backward = true
			if got := queryIDs(t, s, from); !slices.Equal(got, []string{"a4", "a3"}) {
				t.Errorf("backward from a4: %v", got)
			}
			lim := all
			lim.Limit = 2
			if got := queryIDs(t, s, lim); !slices.Equal(got, []string{"a3", "a4"}) {
				t.Errorf("limit 2: %v", got)
			}
			// Truncated and deleted events no longer match.
			if _, err := s.truncateStream(ctx, nil, "acme", "c2", 3, Any); err != nil {
				t.Fatal(err)
			}
			if got := queryIDs(t, s, all); !slices.Equal(got, []string{"a5"}) {
				t.Errorf("after truncating c2 before 3: %v, want [a5]", got)
			}
			if _, err := s.deleteStream(ctx, nil, "acme", "c1", false, "", "", Any); err != nil {
				t.Fatal(err)
			}
			if got := queryIDs(t, s, q(QueryItem{Tags: []string{"course:c1"}})); len(got) != 0 {
				t.Errorf("after deleting c1: %v, want none", got)
			}
			if got := queryIDs(t, s, ReadAllOptions{Tenant: "other", Query: Query{Items: []QueryItem{{Tags: []string{"course:c1"}}}}}); !slices.Equal(got, []string{"b1"}) {
				t.Errorf("other tenant: %v", got)
			}
			// Invalid queries.
			for _, bad := range []ReadAllOptions{
				q(QueryItem{}),
				q(QueryItem{Tags: []string{""}}),
				{Query: Query{Items: []QueryItem{{Tags: []string{"x"}}}}},
				{Tenant: "acme", Types: []string{"x"}, Query: Query{Items: []QueryItem{{Tags: []string{"x"}}}}},
			} {
				for _, err := range s.ReadAll(ctx, bad) {
					if !errors.Is(err, envelope.ErrInvalidEvent) {
						t.Errorf("%+v: %v, want an invalid query", bad, err)
					}
					break
				}
			}
		})
	}
}

// TestAppendCondition: an append fails when an event matching the
// condition's query has a position after its After, writes nothing, and
// names the first such event; the expected version is checked first; an
// idempotent retry gets its first result before the condition is looked
// at; in an Update the condition sees the transaction's earlier appends.
func TestAppendCondition(t *testing.T) {
	for name, s := range groupTestStores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			user := Query{Items: []QueryItem{{Types: []string{"UserRegistered"}, Tags: []string{"username:alice"}}}}
			claim := Any.If(Condition{Query: user})
			r1, err := s.Append(ctx, "acme", "user-1", NoStream.If(Condition{Query: user}), tagEvent(t, "UserRegistered", "u1", "username:alice"))
			if err != nil {
				t.Fatal(err)
			}
			_, err = s.Append(ctx, "acme", "user-2", claim, tagEvent(t, "UserRegistered", "u2", "username:alice"))
			var ce *ConditionError
			if !errors.As(err, &ce) || !errors.Is(err, ErrConditionFailed) || !errors.Is(err, ErrConflict) {
				t.Fatalf("second claim: %v, want a *ConditionError", err)
			}
			if ce.Position != r1.FirstPosition() || ce.EventID != "u1" || ce.After != 0 || ce.Stream != "user-2" {
				t.Errorf("condition error %+v, want the first claim at %d", ce, r1.FirstPosition())
			}
			if v, _ := s.StreamVersion(ctx, "acme", "user-2"); v != 0 {
				t.Errorf("a failed condition stored events: user-2 at %d", v)
			}
			// An idempotent retry of the first claim: its own event
			// matches, yet it returns the first result.
			again, err := s.Append(ctx, "acme", "user-1", Any.If(Condition{Query: user}), tagEvent(t, "UserRegistered", "u1", "username:alice"))
			if err != nil || !again.Replayed || again.FirstPosition() != r1.FirstPosition() {
				t.Errorf("retry of the first claim: %+v, %v; want its first result", again, err)
			}
			// After the matching event: holds.
			if _, err := s.Append(ctx, "acme", "user-1", Any.If(Condition{Query: user, After: r1.FirstPosition()}), tagEvent(t, "Other", "o1", "username:alice")); err != nil {
				t.Errorf("condition after the match: %v", err)
			}
			// Another tenant's events do not count.
			if _, err := s.Append(ctx, "other", "user-9", claim, tagEvent(t, "UserRegistered", "x1", "username:alice")); err != nil {
				t.Errorf("other tenant: %v", err)
			}
			// Both fail: the expected version wins.
			_, err = s.Append(ctx, "acme", "user-1", Exact(7).If(Condition{Query: user}), tagEvent(t, "UserRegistered", "u3", "username:alice"))
			var conf *ConflictError
			if !errors.As(err, &conf) || errors.Is(err, ErrConditionFailed) {
				t.Errorf("expected and condition both failing: %v, want the *ConflictError", err)
			}
			// The zero Query: any event of the tenant after After.
			head, _ := s.Head(ctx)
			if _, err := s.Append(ctx, "acme", "x", Any.If(Condition{After: head}), tagEvent(t, "X", "z1")); err != nil {
				t.Errorf("nothing after the head: %v", err)
			}
			if _, err := s.Append(ctx, "acme", "x", Any.If(Condition{After: head}), tagEvent(t, "X", "z2")); !errors.Is(err, ErrConditionFailed) {
				t.Errorf("an event after After, zero query: %v", err)
			}
			// Update across two streams: the condition sees the first
			// append of the same transaction.
			bob := Query{Items: []QueryItem{{Tags: []string{"username:bob"}}}}
			err = s.Update(ctx, func(tx *Tx) error {
				if _, err := tx.Append(ctx, "acme", "user-3", Any.If(Condition{Query: bob}), tagEvent(t, "UserRegistered", "b1", "username:bob")); err != nil {
					return err
				}
				_, err := tx.Append(ctx, "acme", "names", Any.If(Condition{Query: bob}), tagEvent(t, "NameTaken", "b2", "username:bob"))
				if !errors.Is(err, ErrConditionFailed) {
					return fmt.Errorf("second append in the Update: %v, want its condition to see the first", err)
				}
				return nil
			})
			if err != nil {
				t.Error(err)
			}
			if got := queryIDs(t, s, ReadAllOptions{Tenant: "acme", Query: bob}); !slices.Equal(got, []string{"b1"}) {
				t.Errorf("bob's events %v, want [b1]", got)
			}
			// Invalid conditions are refused before any transaction.
			if _, err := s.Append(ctx, "acme", "x", Any.If(Condition{Query: Query{Items: []QueryItem{{}}}}), tagEvent(t, "X", "z3")); !errors.Is(err, envelope.ErrInvalidEvent) {
				t.Errorf("item naming neither: %v", err)
			}
		})
	}
}

// TestConditionInGroupCommit: in one group commit, a request's condition
// sees the appends of the requests before it: of two claims of the same
// name in one group, the first wins and the second fails.
func TestConditionInGroupCommit(t *testing.T) {
	for name, s := range groupTestStores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			name := Query{Items: []QueryItem{{Tags: []string{"username:carol"}}}}
			var group []*request
			for i := range 3 {
				a, err := s.prepareAppend("acme", fmt.Sprint("user-", i), NoStream.If(Condition{Query: name}),
					[]envelope.Event{tagEvent(t, "UserRegistered", fmt.Sprint("c", i), "username:carol")})
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
				switch {
				case i == 0 && r.err != nil:
					t.Errorf("first claim: %v", r.err)
				case i > 0 && !errors.Is(r.err, ErrConditionFailed):
					t.Errorf("claim %d in the same group: %v, want a failed condition", i, r.err)
				}
			}
			if got := queryIDs(t, s, ReadAllOptions{Tenant: "acme", Query: name}); !slices.Equal(got, []string{"c0"}) {
				t.Errorf("carol's events %v, want [c0]", got)
			}
			if err := s.CheckInvariants(ctx); err != nil {
				t.Error(err)
			}
		})
	}
}
