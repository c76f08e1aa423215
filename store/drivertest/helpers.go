package drivertest

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/store"
)

// ev is an event of type typ carrying data as JSON.
func ev(t testing.TB, typ string, data any) envelope.Event {
	t.Helper()
	e, err := envelope.New(typ, data)
	if err != nil {
		t.Fatal(err)
	}
	e.Source = "/test"
	return e
}

// evID is ev with a given id, for the tests of idempotent retries.
func evID(t testing.TB, id, typ string, data any) envelope.Event {
	e := ev(t, typ, data)
	e.ID = id
	return e
}

func readStream(t testing.TB, s *store.Store, tenant, stream string) []envelope.Event {
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

// fillStream appends n events to a stream and returns its version.
func fillStream(t *testing.T, s *store.Store, stream string, n int) int64 {
	t.Helper()
	var v int64
	for i := range n {
		res, err := s.Append(context.Background(), "default", stream, store.Any, ev(t, "t", map[string]int{"i": i}))
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

// bind rewrites a statement written with ? placeholders for the
// dialect that runs it: the suite's read models are plain SQL that
// every engine runs but for the placeholders.
func bind(d store.Dialect, q string) string {
	if d != store.DialectPostgres {
		return q
	}
	var b strings.Builder
	n := 0
	for _, r := range q {
		if r == '?' {
			n++
			fmt.Fprintf(&b, "$%d", n)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// fakeClock is a clock the test moves.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}
