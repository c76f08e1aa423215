package store_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/drivertest"
	"github.com/eventlite/eventlite/store/storetest"
)

// Streams pages by prefix and after, in byte order, and reports each
// stream's first and last positions.
func TestStreamsOptions(t *testing.T) {
	ctx := context.Background()
	s := storetest.MustOpen(t, nil)
	// Appended out of order, so that positions do not follow ids.
	for i, id := range []string{"order-2", "b", "order-1", "order-10", "order", "order-1", "p", "order-"} {
		if _, err := s.Append(ctx, "default", id, store.Any, drivertest.Event(t, "x", i)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Append(ctx, "other", "order-3", store.Any, drivertest.Event(t, "x", 0)); err != nil {
		t.Fatal(err)
	}
	list := func(o store.StreamsOptions) []string {
		var out []string
		for si, err := range s.Streams(ctx, "default", o) {
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, si.Stream)
		}
		return out
	}
	tests := []struct {
		opts store.StreamsOptions
		want []string
	}{
		{store.StreamsOptions{}, []string{"b", "order", "order-", "order-1", "order-10", "order-2", "p"}},
		{store.StreamsOptions{Prefix: "order-"}, []string{"order-", "order-1", "order-10", "order-2"}},
		{store.StreamsOptions{Prefix: "order-1"}, []string{"order-1", "order-10"}},
		{store.StreamsOptions{Prefix: "order-", After: "order-1"}, []string{"order-10", "order-2"}},
		{store.StreamsOptions{Prefix: "order-", Limit: 2}, []string{"order-", "order-1"}},
		{store.StreamsOptions{After: "order-2"}, []string{"p"}},
		{store.StreamsOptions{After: "a", Limit: 1}, []string{"b"}},
		{store.StreamsOptions{Prefix: "q"}, nil},
		{store.StreamsOptions{Prefix: "order-", After: "p"}, nil},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, list(tt.opts)); diff != "" {
			t.Errorf("%+v (-want +got):\n%s", tt.opts, diff)
		}
	}
	if got := list(store.StreamsOptions{}); len(got) != 7 {
		t.Fatalf("no options: %v", got)
	}
	for si, err := range s.Streams(ctx, "default", store.StreamsOptions{Prefix: "order-1", Limit: 1}) {
		if err != nil {
			t.Fatal(err)
		}
		// order-1 got positions 3 and 6.
		if si.Stream != "order-1" || si.Version != 2 || si.FirstPosition != 3 || si.LastPosition != 6 || si.UpdatedAt.Before(si.CreatedAt) {
			t.Errorf("order-1: %+v", si)
		}
	}
	for _, err := range s.Streams(ctx, "default", store.StreamsOptions{Limit: -1}) {
		if err == nil {
			t.Error("a negative limit was accepted")
		}
	}
}

// A retried append says it was replayed; the first one does not.
func TestAppendReplayed(t *testing.T) {
	ctx := context.Background()
	s := storetest.MustOpen(t, nil)
	e := drivertest.EventWithID(t, "01J00000000000000000000001", "x", 1)
	first, err := s.Append(ctx, "default", "s", store.NoStream, e)
	if err != nil || first.Replayed {
		t.Fatalf("first append: %+v, %v", first, err)
	}
	again, err := s.Append(ctx, "default", "s", store.NoStream, e)
	if err != nil || !again.Replayed || again.Version != 1 || again.FirstPosition() != first.FirstPosition() {
		t.Fatalf("retry: %+v, %v", again, err)
	}
}
