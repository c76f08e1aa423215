package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/storetest"
)

// TestPostgresFarTimesRefused: an event time that unix nanoseconds do not
// hold (a SQLite file keeps it as text) is invalid input on PostgreSQL,
// naming the field, and nothing of the batch is stored; the range's ends
// are kept.
func TestPostgresFarTimesRefused(t *testing.T) {
	base := storetest.PostgresBase(t)
	ctx := context.Background()
	s := openAddr(t, storetest.PostgresSchema(t, base), nil)
	ev := func(id string, at time.Time) envelope.Event {
		return envelope.Event{ID: id, Type: "t", Source: "/t", Time: at}
	}
	for _, far := range []time.Time{
		time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(1600, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Unix(0, 1<<63-1).Add(time.Nanosecond),
	} {
		_, err := s.Append(ctx, "acme", "s", store.Any, ev("ok-"+far.String(), time.Unix(0, 0)), ev("far-"+far.String(), far))
		var ie *envelope.InvalidError
		if !errors.As(err, &ie) || ie.Field != "time" || ie.Index != 1 || !errors.Is(err, store.ErrInvalidEvent) {
			t.Errorf("time %s: %v, want an *envelope.InvalidError on field time of event 1", far, err)
		}
	}
	if h, err := s.Head(ctx); err != nil || h != 0 {
		t.Fatalf("after refused appends the head is %d, %v; want nothing stored", h, err)
	}
	for i, at := range []time.Time{time.Unix(0, -1<<63), time.Unix(0, 1<<63-1)} {
		if _, err := s.Append(ctx, "acme", "s", store.Any, ev("edge-"+string(rune('a'+i)), at)); err != nil {
			t.Fatalf("time %s, at the range's end: %v", at.UTC(), err)
		}
		e, err := s.EventByID(ctx, "acme", "edge-"+string(rune('a'+i)))
		if err != nil || !e.Time.Equal(at) {
			t.Errorf("read back %v (%v), want %v", e.Time, err, at)
		}
	}
}
