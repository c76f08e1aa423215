package store_test

import (
	"context"
	"errors"
	"testing"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/storetest"
)

// TestAppendWithoutSource: the store refuses an event without a source,
// naming Event.Source and the registry's default, and stores nothing: it
// never fills a source in.
func TestAppendWithoutSource(t *testing.T) {
	ctx := context.Background()
	s := storetest.MustOpen(t, nil)
	ok, err := envelope.New("order.placed", map[string]int{"total": 1})
	if err != nil {
		t.Fatal(err)
	}
	ok.Source = "/orders"
	none, _ := envelope.New("order.placed", map[string]int{"total": 2})
	_, err = s.Append(ctx, "default", "order-1", store.NoStream, ok, none)
	want := `invalid event 1: source: required and empty: set Event.Source to a URI-reference naming the producer (for example "/orders"), or give the Registry a default that Encode applies (Registry.SetSource)`
	if !errors.Is(err, envelope.ErrInvalidEvent) || err.Error() != want {
		t.Errorf("append:\n got %v\nwant %s", err, want)
	}
	if h, err := s.Head(ctx); err != nil || h != 0 {
		t.Errorf("head %d, %v: the refused append stored something", h, err)
	}
}
