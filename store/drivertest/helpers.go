package drivertest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/store"
)

// Event is an event of type typ carrying data as JSON, from the source
// "/test".
func Event(t testing.TB, typ string, data any) envelope.Event {
	t.Helper()
	e, err := envelope.New(typ, data)
	if err != nil {
		t.Fatal(err)
	}
	e.Source = "/test"
	return e
}

// EventWithID is Event with a given id, for the tests of idempotent
// retries.
func EventWithID(t testing.TB, id, typ string, data any) envelope.Event {
	e := Event(t, typ, data)
	e.ID = id
	return e
}

// ReadStream reads a whole stream and fails the test on an error.
func ReadStream(t testing.TB, s *store.Store, tenant, stream string) []envelope.Event {
	t.Helper()
	var out []envelope.Event
	for e, err := range s.ReadStream(context.Background(), tenant, stream, store.ReadStreamOptions{}) {
		if err != nil {
			t.Fatalf("read %s: %v", stream, err)
		}
		out = append(out, e)
	}
	return out
}

// FillStream appends n events to a stream of the default tenant, one
// append each, and returns its version.
func FillStream(t *testing.T, s *store.Store, stream string, n int) int64 {
	t.Helper()
	var v int64
	for i := range n {
		res, err := s.Append(context.Background(), "default", stream, store.Any, Event(t, "t", map[string]int{"i": i}))
		if err != nil {
			t.Fatal(err)
		}
		v = res.Version
	}
	return v
}

func readErr(s *store.Store, stream string) ([]envelope.Event, error) {
	var out []envelope.Event
	for e, err := range s.ReadStream(context.Background(), "default", stream, store.ReadStreamOptions{}) {
		if err != nil {
			return out, err
		}
		out = append(out, e)
	}
	return out, nil
}

// FakeClock is a clock the test moves, for store.Options.Clock.
type FakeClock struct {
	mu  sync.Mutex
	now time.Time
}

// NewFakeClock returns a clock that reads now until the test moves it.
func NewFakeClock(now time.Time) *FakeClock { return &FakeClock{now: now} }

// Now returns the clock's time.
func (c *FakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }

// Advance moves the clock forward by d.
func (c *FakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}
