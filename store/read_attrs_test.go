package store_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/drivertest"
	"github.com/eventlite/eventlite/store/outbox"
	"github.com/eventlite/eventlite/store/storetest"
	"github.com/google/go-cmp/cmp"
)

// TestReadAttrsEveryCombination appends an event for each combination of
// the four attributes reads fetch as one column (dataschema,
// correlationid, causationid, other extensions), and reads each back
// through a stream read, a log read, a read by id and the relay's read of
// the outbox: every attribute comes back in its own field, empty ones
// empty.
func TestReadAttrsEveryCombination(t *testing.T) {
	ctx := context.Background()
	s := storetest.MustOpen(t, nil)
	in := attrCombinations(t)
	res, err := s.Append(ctx, "acme", "order-1", store.NoStream, in...)
	if err != nil {
		t.Fatal(err)
	}
	want := res.Events
	if diff := cmp.Diff(want, drivertest.ReadStream(t, s, "acme", "order-1")); diff != "" {
		t.Errorf("ReadStream (-appended +read):\n%s", diff)
	}
	var all []envelope.Event
	for e, err := range s.ReadAll(ctx, store.ReadAllOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, e)
	}
	if diff := cmp.Diff(want, all); diff != "" {
		t.Errorf("ReadAll (-appended +read):\n%s", diff)
	}
	rows, err := outbox.For(s).Read(ctx, outbox.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var relayed []envelope.Event
	for _, r := range rows {
		relayed = append(relayed, r.Event)
	}
	if diff := cmp.Diff(want, relayed); diff != "" {
		t.Errorf("Outbox.Read (-appended +read):\n%s", diff)
	}
	for _, w := range want {
		got, err := s.EventByID(ctx, "acme", w.ID)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(w, got); diff != "" {
			t.Errorf("EventByID %s (-appended +read):\n%s", w.ID, diff)
		}
	}
}

// attrCombinations returns 16 events e-0..e-15 with every combination of
// the four attributes most events leave empty: dataschema (bit 0),
// correlationid (1), causationid (2) and other extensions (3).
func attrCombinations(t *testing.T) []envelope.Event {
	t.Helper()
	var in []envelope.Event
	for m := range 16 {
		e := drivertest.EventWithID(t, fmt.Sprintf("e-%d", m), "order.placed", map[string]any{"m": m})
		if m&1 != 0 {
			e.DataSchema = "https://example.com/schema/" + fmt.Sprint(m)
		}
		if m&2 != 0 {
			e.CorrelationID = "corr-" + fmt.Sprint(m)
		}
		if m&4 != 0 {
			e.CausationID = "cause-" + fmt.Sprint(m)
		}
		if m&8 != 0 {
			e.Extensions = map[string]any{"traceparent": "00-" + fmt.Sprint(m), "n": int32(m), "ok": true}
		}
		in = append(in, e)
	}
	return in
}
