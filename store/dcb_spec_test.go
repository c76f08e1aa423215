package store_test

// The Dynamic Consistency Boundary specification (dcb.events, read on
// 3 December 2026), requirement by requirement: each MUST and SHOULD of
// the specification has a test here, listed in docs/design.md ("The
// Dynamic Consistency Boundary specification, requirement by
// requirement"). Each runs on SQLite and, with EVENTLITE_TEST_POSTGRES,
// on PostgreSQL.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/storetest"
)

// onSpecEngines runs fn on a fresh store per engine.
func onSpecEngines(t *testing.T, fn func(t *testing.T, s *store.Store)) {
	t.Run("sqlite", func(t *testing.T) { fn(t, storetest.MustOpen(t, nil)) })
	t.Run("postgres", func(t *testing.T) {
		fn(t, openAddr(t, storetest.PostgresSchema(t, storetest.PostgresBase(t)), nil))
	})
}

// specEvent is an event of type typ with tags and a small JSON body.
func specEvent(t testing.TB, typ string, tags ...string) envelope.Event {
	t.Helper()
	e, err := envelope.New(typ, map[string]string{"t": typ})
	if err != nil {
		t.Fatal(err)
	}
	e.Source = "/spec"
	e.Tags = tags
	return e
}

// specAppend appends events to stream in tenant "default" and returns
// their positions.
func specAppend(t testing.TB, s *store.Store, stream string, events ...envelope.Event) []int64 {
	t.Helper()
	r, err := s.Append(context.Background(), "default", stream, store.Any, events...)
	if err != nil {
		t.Fatal(err)
	}
	return r.Positions()
}

// specRead returns the positions of the events opts reads.
func specRead(t testing.TB, s *store.Store, opts store.ReadAllOptions) ([]int64, error) {
	t.Helper()
	if opts.Tenant == "" {
		opts.Tenant = "default"
	}
	var got []int64
	for e, err := range s.ReadAll(context.Background(), opts) {
		if err != nil {
			return got, err
		}
		got = append(got, e.Position)
	}
	return got, nil
}

func mustSpecRead(t testing.TB, s *store.Store, q store.Query) []int64 {
	t.Helper()
	got, err := specRead(t, s, store.ReadAllOptions{Query: q})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// specLog appends the four events the reading tests query:
//
//	A: type t1, tags x     B: type t2, tags x, y
//	C: type t1, tags y     D: type t3, no tags
//
// each to a stream of its own, and one more in another tenant (type t1,
// tags x, y) that no query of tenant "default" may return.
func specLog(t testing.TB, s *store.Store) (a, b, c, d int64) {
	t.Helper()
	a = specAppend(t, s, "sa", specEvent(t, "t1", "x"))[0]
	if _, err := s.Append(context.Background(), "other", "so", store.Any, specEvent(t, "t1", "x", "y")); err != nil {
		t.Fatal(err)
	}
	b = specAppend(t, s, "sb", specEvent(t, "t2", "x", "y"))[0]
	c = specAppend(t, s, "sc", specEvent(t, "t1", "y"))[0]
	d = specAppend(t, s, "sd", specEvent(t, "t3"))[0]
	return a, b, c, d
}

func item(types []string, tags ...string) store.QueryItem {
	return store.QueryItem{Types: types, Tags: tags}
}

// TestSpecReadFiltersByTypeAndTag: "The Event Store MUST provide a way
// to filter Events based on their Event Type and/or Tag."
func TestSpecReadFiltersByTypeAndTag(t *testing.T) {
	onSpecEngines(t, func(t *testing.T, s *store.Store) {
		a, b, c, _ := specLog(t, s)
		for _, tc := range []struct {
			name string
			q    store.Query
			want []int64
		}{
			{"type", store.Query{Items: []store.QueryItem{item([]string{"t1"})}}, []int64{a, c}},
			{"tag", store.Query{Items: []store.QueryItem{item(nil, "x")}}, []int64{a, b}},
			{"type and tag", store.Query{Items: []store.QueryItem{item([]string{"t1"}, "y")}}, []int64{c}},
			{"no match", store.Query{Items: []store.QueryItem{item([]string{"t2"}, "nope")}}, nil},
		} {
			if diff := cmp.Diff(tc.want, mustSpecRead(t, s, tc.q)); diff != "" {
				t.Errorf("%s (-want +got):\n%s", tc.name, diff)
			}
		}
	})
}

// TestSpecReadFromPosition: "The Event Store SHOULD provide a way to read
// Events from a given starting Sequence Position" (and MAY offer an
// order and a limit: backward and Limit).
func TestSpecReadFromPosition(t *testing.T) {
	onSpecEngines(t, func(t *testing.T, s *store.Store) {
		a, b, c, _ := specLog(t, s)
		q := store.Query{Items: []store.QueryItem{item([]string{"t1", "t2"})}}
		for _, tc := range []struct {
			name string
			opts store.ReadAllOptions
			want []int64
		}{
			{"from A", store.ReadAllOptions{Query: q, From: a}, []int64{a, b, c}},
			{"from B", store.ReadAllOptions{Query: q, From: b}, []int64{b, c}},
			{"from after C", store.ReadAllOptions{Query: q, From: c + 1}, nil},
			{"limit", store.ReadAllOptions{Query: q, From: b, Limit: 1}, []int64{b}},
			{"backward from B", store.ReadAllOptions{Query: q, From: b, Backward: true}, []int64{b, a}},
		} {
			got, err := specRead(t, s, tc.opts)
			if err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s (-want +got):\n%s", tc.name, diff)
			}
		}
	})
}

// TestSpecAppendIsAtomic: "The Event Store MUST provide a way to
// atomically persist one or more Event(s)": an append of several events,
// and a transaction appending to several streams, store all of them or
// none, with and without a condition.
func TestSpecAppendIsAtomic(t *testing.T) {
	onSpecEngines(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		pos := specAppend(t, s, "s1", specEvent(t, "t1", "k"), specEvent(t, "t1", "k"), specEvent(t, "t1", "k"))
		if len(pos) != 3 || pos[2] != pos[0]+2 {
			t.Fatalf("three events at %v", pos)
		}
		head, _ := s.Head(ctx)
		// One append whose third event is invalid.
		bad := specEvent(t, "t1", "k")
		bad.Type = ""
		if _, err := s.Append(ctx, "default", "s2", store.Any, specEvent(t, "t1", "k"), specEvent(t, "t1", "k"), bad); err == nil {
			t.Fatal("an append with an invalid event was stored")
		}
		// A transaction over two streams whose second append's condition
		// fails: it sees the first append's event, which matches.
		err := s.Update(ctx, func(tx *store.Tx) error {
			if _, err := tx.Append(ctx, "default", "s3", store.Any, specEvent(t, "t1", "fresh")); err != nil {
				return err
			}
			_, err := txAppendWithCondition(ctx, tx, "default", "s4", store.Condition{Query: store.Query{Items: []store.QueryItem{item(nil, "fresh")}}, After: head}, specEvent(t, "t1"))
			return err
		})
		if !errors.Is(err, store.ErrConditionFailed) {
			t.Fatalf("Update: %v, want the condition's failure", err)
		}
		if after, _ := s.Head(ctx); after != head {
			t.Errorf("head moved from %d to %d: part of a failed transaction was stored", head, after)
		}
		for _, st := range []string{"s2", "s3", "s4"} {
			if v, _ := s.StreamVersion(ctx, "default", st); v != 0 {
				t.Errorf("stream %s has version %d after failed appends", st, v)
			}
		}
	})
}

// TestSpecConditionFailsOnMatch: "The Event Store MUST fail if the Event
// Store contains at least one Event matching the Append Condition": the
// append stores nothing and its typed error names the first matching
// event.
func TestSpecConditionFailsOnMatch(t *testing.T) {
	onSpecEngines(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		_, b, _, _ := specLog(t, s)
		head, _ := s.Head(ctx)
		stored := mustEventAt(t, s, b)
		cond := store.Condition{Query: store.Query{Items: []store.QueryItem{item([]string{"t2"})}}, After: b - 1}
		_, err := appendWithCondition(ctx, s, "default", "new", cond, specEvent(t, "t2"))
		var ce *store.ConditionError
		if !errors.As(err, &ce) || !errors.Is(err, store.ErrConditionFailed) {
			t.Fatalf("append: %v, want a *store.ConditionError", err)
		}
		if ce.Position != b || ce.EventID != stored.ID {
			t.Errorf("the error names position %d (%s), want %d (%s)", ce.Position, ce.EventID, b, stored.ID)
		}
		if after, _ := s.Head(ctx); after != head {
			t.Errorf("head moved from %d to %d", head, after)
		}
	})
}

// mustEventAt returns the event at position p.
func mustEventAt(t testing.TB, s *store.Store, p int64) envelope.Event {
	t.Helper()
	for e, err := range s.ReadAll(context.Background(), store.ReadAllOptions{From: p, Limit: 1}) {
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	t.Fatalf("no event at %d", p)
	return envelope.Event{}
}

// TestSpecQueryHasItemsOrMatchesAll: a Query "MUST contain a set of
// Query Items with at least one item or represent a query that matches
// all Events": the zero Query matches every event of the tenant (read,
// and Query.Matches); an item that names neither types nor tags is
// refused, alone or beside others.
func TestSpecQueryHasItemsOrMatchesAll(t *testing.T) {
	onSpecEngines(t, func(t *testing.T, s *store.Store) {
		a, b, c, d := specLog(t, s)
		for _, q := range []store.Query{{Items: []store.QueryItem{{}}}, {Items: []store.QueryItem{item([]string{"t1"}), {}}}} {
			if _, err := specRead(t, s, store.ReadAllOptions{Query: q}); !errors.Is(err, store.ErrInvalidEvent) {
				t.Errorf("query %+v: %v, want it refused as invalid", q, err)
			}
		}
		all, err := specRead(t, s, store.ReadAllOptions{Query: store.Query{}})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]int64{a, b, c, d}, all); diff != "" {
			t.Errorf("all events (-want +got):\n%s", diff)
		}
		if !(store.Query{}).Matches(specEvent(t, "anything")) {
			t.Error("the zero Query does not match an event")
		}
	})
}

// TestSpecQueryItemsAreOred: "All Query Items are effectively combined
// with an OR."
func TestSpecQueryItemsAreOred(t *testing.T) {
	onSpecEngines(t, func(t *testing.T, s *store.Store) {
		a, b, c, d := specLog(t, s)
		q := store.Query{Items: []store.QueryItem{item([]string{"t3"}), item(nil, "y"), item([]string{"t1"}, "x")}}
		if diff := cmp.Diff([]int64{a, b, c, d}, mustSpecRead(t, s, q)); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
		// An event matching two items is read once.
		q = store.Query{Items: []store.QueryItem{item(nil, "x"), item(nil, "y")}}
		if diff := cmp.Diff([]int64{a, b, c}, mustSpecRead(t, s, q)); diff != "" {
			t.Errorf("overlapping items (-want +got):\n%s", diff)
		}
	})
}

// TestSpecItemTypeMatchesOneOf: "the Type MUST match one of the provided
// Types of the Query Item."
func TestSpecItemTypeMatchesOneOf(t *testing.T) {
	onSpecEngines(t, func(t *testing.T, s *store.Store) {
		a, b, c, d := specLog(t, s)
		if diff := cmp.Diff([]int64{a, b, c}, mustSpecRead(t, s, store.Query{Items: []store.QueryItem{item([]string{"t1", "t2"})}})); diff != "" {
			t.Errorf("t1 or t2 (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]int64{b, d}, mustSpecRead(t, s, store.Query{Items: []store.QueryItem{item([]string{"t3", "t2", "t9"})}})); diff != "" {
			t.Errorf("t3, t2 or t9 (-want +got):\n%s", diff)
		}
	})
}

// TestSpecItemTagsMatchAllOf: "the Tags MUST contain all of the Tags
// specified by the Query Item."
func TestSpecItemTagsMatchAllOf(t *testing.T) {
	onSpecEngines(t, func(t *testing.T, s *store.Store) {
		_, b, _, _ := specLog(t, s)
		if diff := cmp.Diff([]int64{b}, mustSpecRead(t, s, store.Query{Items: []store.QueryItem{item(nil, "x", "y")}})); diff != "" {
			t.Errorf("x and y (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]int64{b}, mustSpecRead(t, s, store.Query{Items: []store.QueryItem{item(nil, "y", "x")}})); diff != "" {
			t.Errorf("y and x (-want +got):\n%s", diff)
		}
		if got := mustSpecRead(t, s, store.Query{Items: []store.QueryItem{item(nil, "x", "y", "z")}}); len(got) != 0 {
			t.Errorf("x, y and z matched %v", got)
		}
	})
}

// TestSpecSequencedEventHasPositionAndEvent: a Sequenced Event "MUST
// contain the Sequence Position" and "MUST contain the Event".
func TestSpecSequencedEventHasPositionAndEvent(t *testing.T) {
	onSpecEngines(t, func(t *testing.T, s *store.Store) {
		in := specEvent(t, "t1", "p", "q")
		pos := specAppend(t, s, "s", in)[0]
		q := store.Query{Items: []store.QueryItem{item(nil, "p")}}
		n := 0
		for e, err := range s.ReadAll(context.Background(), store.ReadAllOptions{Tenant: "default", Query: q}) {
			if err != nil {
				t.Fatal(err)
			}
			n++
			got := struct {
				Position int64
				ID, Type string
				Data     string
				Tags     []string
			}{e.Position, e.ID, e.Type, string(e.Data), e.Tags}
			want := got
			want.Position, want.Type, want.Data, want.Tags = pos, in.Type, string(in.Data), in.Tags
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		}
		if n != 1 {
			t.Errorf("read %d events, want 1", n)
		}
	})
}

// TestSpecPositionsUniqueAndIncreasing: a Sequence Position "MUST be
// unique" and (revision cbdaa05) "MUST be monotonic increasing": eight
// writers append to streams of two tenants at once; every position read
// back is unique and the log is in increasing position order, each
// writer's events in the order it appended them.
func TestSpecPositionsUniqueAndIncreasing(t *testing.T) {
	onSpecEngines(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		var wg sync.WaitGroup
		results := make([][]int64, 8)
		for w := range 8 {
			wg.Go(func() {
				tenant := []string{"default", "other"}[w%2]
				for i := range 10 {
					r, err := s.Append(ctx, tenant, fmt.Sprintf("w%d-%d", w, i%3), store.Any, specEvent(t, "t1", fmt.Sprintf("w:%d", w)))
					if err != nil {
						t.Error(err)
						return
					}
					results[w] = append(results[w], r.Positions()...)
				}
			})
		}
		wg.Wait()
		var all []int64
		for _, r := range results {
			if !slices.IsSorted(r) {
				t.Errorf("a writer's positions are not increasing: %v", r)
			}
			all = append(all, r...)
		}
		var read []int64
		for e, err := range s.ReadAll(ctx, store.ReadAllOptions{}) {
			if err != nil {
				t.Fatal(err)
			}
			read = append(read, e.Position)
		}
		slices.Sort(all)
		if diff := cmp.Diff(all, read); diff != "" {
			t.Errorf("positions read (-appended +read):\n%s", diff)
		}
		for i := 1; i < len(read); i++ {
			if read[i] <= read[i-1] {
				t.Errorf("position %d after %d", read[i], read[i-1])
			}
		}
	})
}

// TestSpecAppendNeedsEvents: the Events of an append "MUST not be
// empty".
func TestSpecAppendNeedsEvents(t *testing.T) {
	onSpecEngines(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		if _, err := s.Append(ctx, "default", "s", store.Any); !errors.Is(err, store.ErrInvalidEvent) {
			t.Errorf("an append of no events: %v, want it refused as invalid", err)
		}
		cond := store.Condition{Query: store.Query{Items: []store.QueryItem{item(nil, "x")}}}
		if _, err := appendWithCondition(ctx, s, "default", "s", cond); !errors.Is(err, store.ErrInvalidEvent) {
			t.Errorf("a conditional append of no events: %v, want it refused as invalid", err)
		}
	})
}

// TestSpecEventHasTypeDataAndTags: an Event "MUST contain an Event Type",
// "MUST contain Event Data", and (revision 1c397e0) "MUST contain Tags
// ... all associated Tags must always be exposed": an event without a
// type is refused; data and every tag (in order, the separator and the
// escape of the CloudEvents extension included) read back byte for
// byte.
func TestSpecEventHasTypeDataAndTags(t *testing.T) {
	onSpecEngines(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		noType := specEvent(t, "t1")
		noType.Type = ""
		if _, err := s.Append(ctx, "default", "s", store.Any, noType); err == nil {
			t.Error("an event without a type was stored")
		}
		tags := []string{"z:last", "a,b", `back\slash`, "ünïcode:1", "a"}
		in := specEvent(t, "t1", tags...)
		in.Data = []byte(`{"n":1,"s":"x"}`)
		pos := specAppend(t, s, "s", in)[0]
		got := mustEventAt(t, s, pos)
		if string(got.Data) != string(in.Data) {
			t.Errorf("data %q, want %q", got.Data, in.Data)
		}
		if diff := cmp.Diff(tags, got.Tags); diff != "" {
			t.Errorf("tags (-want +got):\n%s", diff)
		}
		for _, tag := range tags {
			if got := mustSpecRead(t, s, store.Query{Items: []store.QueryItem{item(nil, tag)}}); !slices.Equal(got, []int64{pos}) {
				t.Errorf("query by tag %q read %v, want [%d]", tag, got, pos)
			}
		}
	})
}

// TestSpecDuplicateTagRefused: Tags "SHOULD not contain multiple Tags
// with the same value": an event with a tag twice is refused and
// nothing is stored.
func TestSpecDuplicateTagRefused(t *testing.T) {
	onSpecEngines(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		if _, err := s.Append(ctx, "default", "s", store.Any, specEvent(t, "t1", "a", "b", "a")); !errors.Is(err, store.ErrInvalidEvent) {
			t.Errorf("a tag twice: %v, want it refused as invalid", err)
		}
		if h, _ := s.Head(ctx); h != 0 {
			t.Errorf("head %d: something was stored", h)
		}
	})
}

// TestSpecConditionCarriesQuery: an Append Condition "MUST contain a
// failIfEventsMatch Query": Condition.Query is always there, and a
// condition whose query is invalid (an empty item) is refused with
// nothing stored; the zero Query matches every event, so a condition on
// it fails on any event of the tenant after After.
func TestSpecConditionCarriesQuery(t *testing.T) {
	onSpecEngines(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		bad := store.Condition{Query: store.Query{Items: []store.QueryItem{{}}}}
		if _, err := appendWithCondition(ctx, s, "default", "s", bad, specEvent(t, "t1")); !errors.Is(err, store.ErrInvalidEvent) {
			t.Errorf("condition %+v: %v, want it refused as invalid", bad, err)
		}
		if h, _ := s.Head(ctx); h != 0 {
			t.Errorf("head %d: something was stored", h)
		}
		p := specAppend(t, s, "s", specEvent(t, "t1"))[0]
		if _, err := appendWithCondition(ctx, s, "default", "s", store.Condition{After: p}, specEvent(t, "t1")); err != nil {
			t.Errorf("all events after the head: %v", err)
		}
		if _, err := appendWithCondition(ctx, s, "default", "s", store.Condition{After: p}, specEvent(t, "t1")); !errors.Is(err, store.ErrConditionFailed) {
			t.Errorf("all events after %d, one there: %v, want the condition's failure", p, err)
		}
	})
}

// appendWithCondition appends events with the condition c.
func appendWithCondition(ctx context.Context, s *store.Store, tenant, stream string, c store.Condition, events ...envelope.Event) (store.AppendResult, error) {
	return s.Append(ctx, tenant, stream, store.Any.If(c), events...)
}

// txAppendWithCondition appends events in tx with the condition c.
func txAppendWithCondition(ctx context.Context, tx *store.Tx, tenant, stream string, c store.Condition, events ...envelope.Event) (store.AppendResult, error) {
	return tx.Append(ctx, tenant, stream, store.Any.If(c), events...)
}

// TestSpecConditionIgnoresEventsUpToAfter: "The Event Store MUST ignore
// the Events before the specified position while checking the
// condition": events at or before After never fail it; the first one
// after it does, and is the one the error names.
func TestSpecConditionIgnoresEventsUpToAfter(t *testing.T) {
	onSpecEngines(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		p1 := specAppend(t, s, "a", specEvent(t, "t1", "k"))[0]
		p2 := specAppend(t, s, "b", specEvent(t, "t1", "k"))[0]
		q := store.Query{Items: []store.QueryItem{item(nil, "k")}}
		_, err := appendWithCondition(ctx, s, "default", "c", store.Condition{Query: q, After: p1}, specEvent(t, "t1"))
		var ce *store.ConditionError
		if !errors.As(err, &ce) || ce.Position != p2 {
			t.Errorf("after %d: %v, want a failure naming %d", p1, err, p2)
		}
		if _, err := appendWithCondition(ctx, s, "default", "c", store.Condition{Query: q, After: p2}, specEvent(t, "t1")); err != nil {
			t.Errorf("after %d (the last match): %v", p2, err)
		}
	})
}

// TestSpecConditionAfterAboveLastMatch: After "can be higher than the
// position of the last event matching the Query": a condition after the
// head, past the last match and past unrelated events, holds until a
// new matching event is appended.
func TestSpecConditionAfterAboveLastMatch(t *testing.T) {
	onSpecEngines(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		specAppend(t, s, "a", specEvent(t, "t1", "k"))
		specAppend(t, s, "b", specEvent(t, "t2", "other"), specEvent(t, "t1"))
		head, _ := s.Head(ctx)
		q := store.Query{Items: []store.QueryItem{item([]string{"t1"}, "k")}}
		if _, err := appendWithCondition(ctx, s, "default", "c", store.Condition{Query: q, After: head}, specEvent(t, "t3")); err != nil {
			t.Fatalf("after the head: %v", err)
		}
		p := specAppend(t, s, "d", specEvent(t, "t1", "k", "more"))[0]
		_, err := appendWithCondition(ctx, s, "default", "c", store.Condition{Query: q, After: head}, specEvent(t, "t3"))
		var ce *store.ConditionError
		if !errors.As(err, &ce) || ce.Position != p {
			t.Errorf("after a new match: %v, want a failure naming %d", err, p)
		}
	})
}

// TestSpecConditionWithoutAfter: "if omitted, no Events will be ignored,
// effectively failing if any Event matches the specified Query"; with no
// match anywhere it holds. Another tenant's events never match.
func TestSpecConditionWithoutAfter(t *testing.T) {
	onSpecEngines(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		q := store.Query{Items: []store.QueryItem{item(nil, "unique:alice")}}
		if _, err := s.Append(ctx, "other", "u", store.Any, specEvent(t, "t1", "unique:alice")); err != nil {
			t.Fatal(err)
		}
		if _, err := appendWithCondition(ctx, s, "default", "u1", store.Condition{Query: q}, specEvent(t, "t1", "unique:alice")); err != nil {
			t.Fatalf("first claim: %v", err)
		}
		specAppend(t, s, "noise", specEvent(t, "t2"), specEvent(t, "t2"))
		_, err := appendWithCondition(ctx, s, "default", "u2", store.Condition{Query: q}, specEvent(t, "t1", "unique:alice"))
		if !errors.Is(err, store.ErrConditionFailed) {
			t.Errorf("second claim: %v, want the condition's failure", err)
		}
	})
}
