package drivertest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/internal/inside"
	"github.com/eventlite/eventlite/projection"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/lifecycle"
	"github.com/eventlite/eventlite/store/outbox"
	"github.com/eventlite/eventlite/store/storetest"
)

// CountEvents counts the events in the log, all tenants.
func CountEvents(t testing.TB, s *store.Store) int {
	t.Helper()
	n := 0
	for _, err := range s.ReadAll(context.Background(), store.ReadAllOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	return n
}

// Scavenge runs a scavenge and fails the test on an error.
func Scavenge(t testing.TB, s *store.Store, opts lifecycle.ScavengeOptions) lifecycle.ScavengeResult {
	t.Helper()
	res, err := lifecycle.For(s).Scavenge(context.Background(), opts)
	if err != nil {
		t.Fatalf("scavenge: %v", err)
	}
	return res
}

// LifecycleFixture: order-1 truncated before 4 (of 6, then 7 with the
// truncate), order-2 soft-deleted (4 events and the tombstone), order-3
// hard-deleted (3 and the tombstone), order-4 live (2): 10 events a
// scavenge may remove.
func LifecycleFixture(t *testing.T, s *store.Store) {
	t.Helper()
	ctx := context.Background()
	FillStream(t, s, "order-1", 6)
	FillStream(t, s, "order-2", 4)
	FillStream(t, s, "order-3", 3)
	FillStream(t, s, "order-4", 2)
	if _, err := lifecycle.For(s).Truncate(ctx, "default", "order-1", 4, store.Any); err != nil {
		t.Fatal(err)
	}
	if _, err := lifecycle.For(s).Delete(ctx, "default", "order-2", lifecycle.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := lifecycle.For(s).Delete(ctx, "default", "order-3", lifecycle.DeleteOptions{Hard: true}); err != nil {
		t.Fatal(err)
	}
}

func testScavengeRemovesWhatLifecycleAllows(t *testing.T, h Harness) {
	ctx := context.Background()
	s := h.Open(t, nil)
	LifecycleFixture(t, s)
	storetest.PublishAll(t, s)
	head, _ := s.Head(ctx)
	before := CountEvents(t, s)
	res := Scavenge(t, s, lifecycle.ScavengeOptions{BatchSize: 3})
	if res.Removed != 10 {
		t.Fatalf("removed %d events, want 10 (%+v)", res.Removed, res.Streams)
	}
	if got := CountEvents(t, s); got != before-10 {
		t.Fatalf("%d events left, want %d", got, before-10)
	}
	if res.Batches != 4 {
		t.Errorf("%d batches of at most 3 for 10 events, want 4", res.Batches)
	}
	// Truncated: reads still start at 4; deleted: the tombstones stay.
	evs, err := readErr(s, "order-1")
	if err != nil || len(evs) != 4 || evs[0].StreamVersion != 4 {
		t.Fatalf("order-1 after scavenge: %d events (%v)", len(evs), err)
	}
	if _, err := readErr(s, "order-3"); !errors.Is(err, store.ErrStreamDeleted) {
		t.Fatalf("hard-deleted read after scavenge: %v", err)
	}
	var tombstones int
	for e, err := range s.ReadAll(ctx, store.ReadAllOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		if e.Type == lifecycle.TypeStreamDeleted {
			tombstones++
		}
	}
	if tombstones != 2 {
		t.Fatalf("%d tombstones after scavenge, want 2 (a hard delete's is never scavenged)", tombstones)
	}
	// Removed positions are recorded, not holes.
	holes, err := projection.Records(s).HolesBetween(ctx, 0, head)
	if err != nil || len(holes) != 0 {
		t.Fatalf("holes after scavenge: %v (%v)", holes, err)
	}
	if len(res.Ranges) == 0 {
		t.Fatal("no removed ranges reported")
	}
	findings, err := s.Diagnose(ctx, store.DiagnoseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range findings {
		if f.Severity == store.SeverityProblem {
			t.Errorf("doctor after scavenge: %+v", f)
		}
	}
	// A second scavenge finds nothing more.
	if res := Scavenge(t, s, lifecycle.ScavengeOptions{}); res.Removed != 0 {
		t.Fatalf("second scavenge removed %d", res.Removed)
	}
}

func testScavengeHoldsBackUnpublishedAndUnpassed(t *testing.T, h Harness) {
	ctx := context.Background()
	s := h.Open(t, nil)
	LifecycleFixture(t, s)
	// Nothing published: the outbox holds every event back.
	res := Scavenge(t, s, lifecycle.ScavengeOptions{})
	if res.Removed != 0 || len(res.HeldBack) == 0 || res.HeldBack[0].By != "outbox" {
		t.Fatalf("unpublished: removed %d, held %+v", res.Removed, res.HeldBack)
	}
	storetest.PublishAll(t, s)
	// A projection that has passed position 3 only.
	if err := s.Update(ctx, func(tx *store.Tx) error {
		return store.Bookkeeping(inside.Key{}, tx).SetCheckpoint(ctx, "slow", 3, nil)
	}); err != nil {
		t.Fatal(err)
	}
	res = Scavenge(t, s, lifecycle.ScavengeOptions{})
	if res.Removed != 3 {
		t.Fatalf("removed %d with a checkpoint at 3, want 3 (order-1's first three)", res.Removed)
	}
	var held *lifecycle.HoldBack
	for i, h := range res.HeldBack {
		if h.By == "projection" && h.Name == "slow" {
			held = &res.HeldBack[i]
		}
	}
	if held == nil || held.Position != 3 || held.Events != 7 {
		t.Fatalf("held back: %+v, want projection slow at 3 holding 7", res.HeldBack)
	}
	head, _ := s.Head(ctx)
	if err := s.Update(ctx, func(tx *store.Tx) error {
		return store.Bookkeeping(inside.Key{}, tx).SetCheckpoint(ctx, "slow", head, nil)
	}); err != nil {
		t.Fatal(err)
	}
	if res := Scavenge(t, s, lifecycle.ScavengeOptions{}); res.Removed != 7 {
		t.Fatalf("removed %d once the projection passed, want 7", res.Removed)
	}
}

func testScavengeRemovedIDIsDuplicate(t *testing.T, h Harness) {
	ctx := context.Background()
	s := h.Open(t, nil)
	first := EventWithID(t, "evt-removed", "t", map[string]int{"i": 0})
	if _, err := s.Append(ctx, "default", "cart-1", store.NoStream, first); err != nil {
		t.Fatal(err)
	}
	FillStream(t, s, "cart-1", 2)
	if _, err := lifecycle.For(s).Truncate(ctx, "default", "cart-1", 2, store.Any); err != nil {
		t.Fatal(err)
	}
	storetest.PublishAll(t, s)
	if res := Scavenge(t, s, lifecycle.ScavengeOptions{}); res.Removed != 1 {
		t.Fatalf("removed %d, want 1", res.Removed)
	}
	for _, stream := range []string{"cart-1", "cart-2"} {
		_, err := s.Append(ctx, "default", stream, store.Any, EventWithID(t, "evt-removed", "t", map[string]int{"i": 0}))
		var de *store.DuplicateError
		if !errors.As(err, &de) || !errors.Is(err, store.ErrDuplicate) {
			t.Fatalf("append to %s with a removed event's id: %v, want a *DuplicateError", stream, err)
		}
	}
	// Another tenant may use it: ids are unique per tenant.
	if _, err := s.Append(ctx, "other", "cart-1", store.Any, EventWithID(t, "evt-removed", "t", nil)); err != nil {
		t.Fatal(err)
	}
}

func testScavengePositionsNeverReusedAfterRestart(t *testing.T, h Harness) {
	ctx := context.Background()
	s := h.Open(t, nil)
	LifecycleFixture(t, s)
	storetest.PublishAll(t, s)
	head, _ := s.Head(ctx)
	res := Scavenge(t, s, lifecycle.ScavengeOptions{})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = h.reopen(t, s, nil)
	r, err := s.Append(ctx, "default", "order-9", store.Any, Event(t, "t", nil))
	if err != nil {
		t.Fatal(err)
	}
	if p := r.Events[0].Position; p != head+1 {
		t.Fatalf("first append after scavenge and restart got position %d, want %d (head was %d)", p, head+1, head)
	}
	for _, rg := range res.Ranges {
		for e, err := range s.ReadAll(ctx, store.ReadAllOptions{}) {
			if err != nil {
				t.Fatal(err)
			}
			if e.Position >= rg.From && e.Position <= rg.To {
				t.Fatalf("position %d is in removed range %+v", e.Position, rg)
			}
		}
	}
}

func testRetentionPolicies(t *testing.T, h Harness) {
	ctx := context.Background()
	s := h.Open(t, nil)
	l := lifecycle.For(s)
	for _, p := range []lifecycle.RetentionPolicy{
		{Prefix: "cart-", MaxCount: 2},
		{Prefix: "cart-vip-", MaxAge: time.Hour},
	} {
		if err := l.SetRetention(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	// Replacing a policy replaces both limits.
	if err := l.SetRetention(ctx, lifecycle.RetentionPolicy{Prefix: "cart-", MaxCount: 3}); err != nil {
		t.Fatal(err)
	}
	got, err := l.Retention(ctx)
	if err != nil || len(got) != 2 || got[0].Prefix != "cart-" || got[0].MaxCount != 3 || got[0].MaxAge != 0 || got[1].MaxAge != time.Hour {
		t.Fatalf("policies: %+v (%v)", got, err)
	}
	if err := l.UnsetRetention(ctx, "cart-vip-"); err != nil {
		t.Fatal(err)
	}
	if err := l.UnsetRetention(ctx, "cart-vip-"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("unset of a prefix without a policy: %v, want ErrNotFound", err)
	}
}

func testRetentionRefusesBadPolicies(t *testing.T, h Harness) {
	ctx := context.Background()
	s := h.Open(t, nil)
	for _, p := range []lifecycle.RetentionPolicy{
		{Prefix: "a", MaxAge: -time.Second},
		{Prefix: "a", MaxCount: -1},
		{Prefix: "a"},
	} {
		err := lifecycle.For(s).SetRetention(ctx, p)
		var ie *envelope.InvalidError
		if !errors.As(err, &ie) || ie.Field == "" || ie.Reason == "" {
			t.Errorf("SetRetention(%+v) = %v, want an *envelope.InvalidError naming the field", p, err)
		}
	}
	if got, _ := lifecycle.For(s).Retention(ctx); len(got) != 0 {
		t.Fatalf("a refused policy was stored: %+v", got)
	}
}

func testRetentionMaxCountTrimsAndLongestPrefixWins(t *testing.T, h Harness) {
	ctx := context.Background()
	s := h.Open(t, nil)
	FillStream(t, s, "cart-1", 5)
	FillStream(t, s, "cart-vip-1", 5)
	FillStream(t, s, "order-1", 5)
	// A truncate's own event does not count toward max count.
	if _, err := lifecycle.For(s).Truncate(ctx, "default", "cart-1", 2, store.Any); err != nil {
		t.Fatal(err)
	}
	for _, p := range []lifecycle.RetentionPolicy{{Prefix: "cart-", MaxCount: 2}, {Prefix: "cart-vip-", MaxCount: 4}} {
		if err := lifecycle.For(s).SetRetention(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	storetest.PublishAll(t, s)
	res := Scavenge(t, s, lifecycle.ScavengeOptions{})
	want := map[string]int64{"cart-1": 4, "cart-vip-1": 2}
	if len(res.Trims) != 2 {
		t.Fatalf("trims %+v, want cart-1 before 4 and cart-vip-1 before 2", res.Trims)
	}
	for _, tr := range res.Trims {
		if want[tr.Stream] != tr.Before || tr.Version == 0 {
			t.Errorf("trim %+v, want before %d and the truncate's version", tr, want[tr.Stream])
		}
	}
	// cart-1: versions 1..3 go, 4 and 5 stay, plus the two truncate events.
	evs, err := readErr(s, "cart-1")
	if err != nil || len(evs) != 4 || evs[0].StreamVersion != 4 || evs[3].Type != lifecycle.TypeStreamTruncated {
		t.Fatalf("cart-1 after retention: %d events %v", len(evs), err)
	}
	var tr lifecycle.StreamTruncated
	if err := json.Unmarshal(evs[3].Data, &tr); err != nil || tr.Before != 4 {
		t.Fatalf("truncate event %s", evs[3].Data)
	}
	if res.Removed != 3+1 {
		t.Fatalf("removed %d, want 4 (cart-1's 1..3, cart-vip-1's 1)", res.Removed)
	}
	// Stable: a second scavenge trims nothing more.
	storetest.PublishAll(t, s)
	if res := Scavenge(t, s, lifecycle.ScavengeOptions{}); len(res.Trims) != 0 || res.Removed != 0 {
		t.Fatalf("second scavenge: trims %+v, removed %d", res.Trims, res.Removed)
	}
}

func testRetentionMaxAgeKeepsTheNewestEvent(t *testing.T, h Harness) {
	ctx := context.Background()
	var now atomic.Int64
	now.Store(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	clock := func() time.Time { return time.Unix(0, now.Load()) }
	s := h.Open(t, &store.Options{Now: clock})
	FillStream(t, s, "log-a", 3) // recorded at day 0
	now.Add(int64(48 * time.Hour))
	FillStream(t, s, "log-a", 2) // day 2
	FillStream(t, s, "log-b", 2) // day 2, all expired by day 10
	if err := lifecycle.For(s).SetRetention(ctx, lifecycle.RetentionPolicy{Prefix: "log-", MaxAge: 24 * time.Hour}); err != nil {
		t.Fatal(err)
	}
	now.Add(int64(23 * time.Hour)) // log-a's first three are older than a day, the rest younger
	storetest.PublishAll(t, s)
	res := Scavenge(t, s, lifecycle.ScavengeOptions{})
	if res.Removed != 3 {
		t.Fatalf("day 3: removed %d, want 3 (%+v)", res.Removed, res.Trims)
	}
	now.Add(int64(7 * 24 * time.Hour)) // everything expired
	storetest.PublishAll(t, s)
	res = Scavenge(t, s, lifecycle.ScavengeOptions{})
	for _, st := range []string{"log-a", "log-b"} {
		evs, err := readErr(s, st)
		if err != nil || len(evs) < 2 || evs[0].Type != "t" || evs[len(evs)-1].Type != lifecycle.TypeStreamTruncated {
			t.Fatalf("%s when all expired: %d events (%v): want its newest event, then truncates", st, len(evs), err)
		}
		for _, e := range evs[1:] {
			if e.Type == "t" {
				t.Fatalf("%s when all expired: more than its newest event stays: %+v", st, evs)
			}
		}
	}
	storetest.PublishAll(t, s)
	if res := Scavenge(t, s, lifecycle.ScavengeOptions{}); len(res.Trims) != 0 {
		t.Fatalf("a scavenge of expired streams trims again: %+v", res.Trims)
	}
}

func isErr(target error) func(error) bool {
	return func(err error) bool { return errors.Is(err, target) }
}

func isInvalid(field string) func(error) bool {
	return func(err error) bool {
		var ie *envelope.InvalidError
		return errors.As(err, &ie) && ie.Field == field
	}
}

func testSoftDelete(t *testing.T, h Harness) {
	ctx := context.Background()
	s := h.Open(t, nil)
	FillStream(t, s, "order-1", 4)
	err := s.Update(ctx, func(tx *store.Tx) error {
		return tx.SaveSnapshot(ctx, store.Snapshot{Tenant: "default", Stream: "order-1", SchemaVersion: 1, Version: 4, State: []byte("{}")})
	})
	if err != nil {
		t.Fatal(err)
	}
	res, err := lifecycle.For(s).Delete(ctx, "default", "order-1", lifecycle.DeleteOptions{Reason: "gdpr", By: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Version != 5 || len(res.Events) != 1 || res.Events[0].Type != lifecycle.TypeStreamDeleted {
		t.Fatalf("delete result = version %d, %d events", res.Version, len(res.Events))
	}
	var d lifecycle.StreamDeleted
	if err := json.Unmarshal(res.Events[0].Data, &d); err != nil || d.Reason != "gdpr" || d.By != "alice" || d.Hard {
		t.Fatalf("tombstone data %s (%v)", res.Events[0].Data, err)
	}
	if _, err := readErr(s, "order-1"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("read after soft delete: %v, want ErrNotFound", err)
	}
	if v, err := s.StreamVersion(ctx, "default", "order-1"); v != 0 || err != nil {
		t.Fatalf("StreamVersion after soft delete = %d, %v; want 0", v, err)
	}
	if _, ok, err := s.Aggregates().LoadSnapshot(ctx, "default", "order-1", 1); ok || err != nil {
		t.Fatalf("snapshot survived the delete (%v)", err)
	}
	// The events and the tombstone stay in the log.
	var types []string
	for e, err := range s.ReadAll(ctx, store.ReadAllOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		types = append(types, e.Type)
	}
	if len(types) != 5 || types[4] != lifecycle.TypeStreamDeleted {
		t.Fatalf("log after delete: %v", types)
	}
	// The relay publishes the tombstone like any other event.
	rows, err := outbox.For(s).Read(ctx, outbox.ReadOptions{})
	if err != nil || len(rows) != 5 || rows[4].Event.Type != lifecycle.TypeStreamDeleted {
		t.Fatalf("outbox after delete: %d rows, %v", len(rows), err)
	}
	// Deleting it again: it is absent.
	if _, err := lifecycle.For(s).Delete(ctx, "default", "order-1", lifecycle.DeleteOptions{}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("second delete: %v, want ErrNotFound", err)
	}
	// exists and N conflict with actual 0.
	for _, exp := range []store.Expected{store.StreamExists, store.Exact(5)} {
		_, err := s.Append(ctx, "default", "order-1", exp, Event(t, "t", nil))
		var ce *store.ConflictError
		if !errors.As(err, &ce) || ce.Actual != 0 {
			t.Fatalf("append %v after soft delete: %v, want a conflict with actual 0", exp, err)
		}
	}
	// no-stream continues after the tombstone's version; reads start there.
	res, err = s.Append(ctx, "default", "order-1", store.NoStream, Event(t, "t", nil))
	if err != nil || res.Version != 6 {
		t.Fatalf("no-stream append after tombstone at 5: version %d, %v; want 6", res.Version, err)
	}
	got, err := readErr(s, "order-1")
	if err != nil || len(got) != 1 || got[0].StreamVersion != 6 {
		t.Fatalf("read after revival: %d events, %v", len(got), err)
	}
	if err := s.CheckInvariants(ctx); err != nil {
		t.Fatal(err)
	}
}

func testSoftDeleteThenAny(t *testing.T, h Harness) {
	ctx := context.Background()
	s := h.Open(t, nil)
	FillStream(t, s, "a", 2)
	if _, err := lifecycle.For(s).Delete(ctx, "default", "a", lifecycle.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	res, err := s.Append(ctx, "default", "a", store.Any, Event(t, "t", nil))
	if err != nil || res.Version != 4 {
		t.Fatalf("any append after tombstone at 3: version %d, %v; want 4", res.Version, err)
	}
}

func testHardDelete(t *testing.T, h Harness) {
	ctx := context.Background()
	s := h.Open(t, nil)
	FillStream(t, s, "a", 2)
	res, err := lifecycle.For(s).Delete(ctx, "default", "a", lifecycle.DeleteOptions{Hard: true, By: "bob"})
	if err == nil {
		err = s.CheckInvariants(ctx)
	}
	if err != nil || res.Version != 3 {
		t.Fatalf("hard delete: %d, %v", res.Version, err)
	}
	for _, exp := range []store.Expected{store.Any, store.NoStream, store.StreamExists, store.Exact(3)} {
		if _, err := s.Append(ctx, "default", "a", exp, Event(t, "t", nil)); !errors.Is(err, store.ErrStreamDeleted) {
			t.Fatalf("append %v to a hard-deleted stream: %v, want ErrStreamDeleted", exp, err)
		}
	}
	if _, err := readErr(s, "a"); !errors.Is(err, store.ErrStreamDeleted) {
		t.Fatalf("read: %v, want ErrStreamDeleted", err)
	}
	if _, err := s.StreamVersion(ctx, "default", "a"); !errors.Is(err, store.ErrStreamDeleted) {
		t.Fatalf("StreamVersion: %v, want ErrStreamDeleted", err)
	}
	for _, hard := range []bool{false, true} {
		if _, err := lifecycle.For(s).Delete(ctx, "default", "a", lifecycle.DeleteOptions{Hard: hard}); !errors.Is(err, store.ErrStreamDeleted) {
			t.Fatalf("delete again (hard %v): %v, want ErrStreamDeleted", hard, err)
		}
	}
	if _, err := lifecycle.For(s).Truncate(ctx, "default", "a", 2, store.Any); !errors.Is(err, store.ErrStreamDeleted) {
		t.Fatalf("truncate: %v, want ErrStreamDeleted", err)
	}
	if h, _ := s.Head(ctx); h != 3 {
		t.Fatalf("head = %d after refused writes, want 3", h)
	}
	// Never writable again: also after a restart.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = h.reopen(t, s, nil)
	if _, err := s.Append(ctx, "default", "a", store.Any, Event(t, "t", nil)); !errors.Is(err, store.ErrStreamDeleted) {
		t.Fatalf("append after a restart: %v, want ErrStreamDeleted", err)
	}
}

func testTruncate(t *testing.T, h Harness) {
	ctx := context.Background()
	s := h.Open(t, nil)
	FillStream(t, s, "a", 5)
	res, err := lifecycle.For(s).Truncate(ctx, "default", "a", 4, store.Exact(5))
	if err != nil || res.Version != 6 || res.Events[0].Type != lifecycle.TypeStreamTruncated || string(res.Events[0].Data) != `{"before":4}` {
		t.Fatalf("truncate: %+v, %v", res, err)
	}
	got, err := readErr(s, "a")
	if err != nil || len(got) != 3 || got[0].StreamVersion != 4 {
		t.Fatalf("read after truncate: %d events, %v; want versions 4..6", len(got), err)
	}
	var back []int64
	for e, err := range s.ReadStream(ctx, "default", "a", store.ReadStreamOptions{Backward: true}) {
		if err != nil {
			t.Fatal(err)
		}
		back = append(back, e.StreamVersion)
	}
	if len(back) != 3 || back[2] != 4 {
		t.Fatalf("backward read after truncate: %v", back)
	}
	if v, _ := s.StreamVersion(ctx, "default", "a"); v != 6 {
		t.Fatalf("version after truncate = %d, want 6", v)
	}
	// Before a version reads already skip: refused, nothing written.
	if _, err := lifecycle.For(s).Truncate(ctx, "default", "a", 3, store.Any); !isInvalid("before")(err) {
		t.Fatalf("truncate before 3 after a truncate before 4: %v, want an invalid before", err)
	}
	// The log keeps every event.
	if h, _ := s.Head(ctx); h != 6 {
		t.Fatalf("head = %d, want 6", h)
	}
	if err := s.CheckInvariants(ctx); err != nil {
		t.Fatal(err)
	}
}

// A count of events is the events reads return: a truncated stream's
// StreamInfo.Events is its versions from the truncate's before on, not
// its version; Stats counts the streams Streams lists (a deleted one
// not) and sums their Events.
func testEventCounts(t *testing.T, h Harness) {
	ctx := context.Background()
	s := h.Open(t, nil)
	FillStream(t, s, "a", 5)
	if _, err := lifecycle.For(s).Truncate(ctx, "default", "a", 4, store.Any); err != nil {
		t.Fatal(err)
	}
	FillStream(t, s, "b", 2)
	if _, err := lifecycle.For(s).Delete(ctx, "default", "b", lifecycle.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	FillStream(t, s, "c", 1)
	got := map[string][2]int64{}
	for si, err := range s.Streams(ctx, "default") {
		if err != nil {
			t.Fatal(err)
		}
		got[si.Stream] = [2]int64{si.Version, si.Events}
	}
	if want := map[string][2]int64{"a": {6, 3}, "c": {1, 1}}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("streams' [version events]: %v, want %v", got, want)
	}
	if read, err := readErr(s, "a"); err != nil || int64(len(read)) != got["a"][1] {
		t.Errorf("a read returns %d events (%v), its Events says %d", len(read), err, got["a"][1])
	}
	for _, tenant := range []string{"default", ""} {
		st, err := s.Inventory().Stats(ctx, tenant)
		if err != nil || st.Events != 4 || st.Streams != 2 {
			t.Errorf("Stats(%q): %d events in %d streams (%v), want 4 in 2", tenant, st.Events, st.Streams, err)
		}
	}
}

// Bad input is a typed error and changes nothing.
func testLifecycleBadInputChangesNothing(t *testing.T, h Harness) {
	ctx := context.Background()
	s := h.Open(t, nil)
	FillStream(t, s, "a", 3)
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	cases := []struct {
		name string
		run  func() error
		want func(error) bool
	}{
		{"truncate before 1", func() error { _, err := lifecycle.For(s).Truncate(ctx, "default", "a", 1, store.Any); return err }, isInvalid("before")},
		{"truncate beyond the head", func() error { _, err := lifecycle.For(s).Truncate(ctx, "default", "a", 4, store.Any); return err }, isInvalid("before")},
		{"truncate unknown stream", func() error { _, err := lifecycle.For(s).Truncate(ctx, "default", "b", 2, store.Any); return err }, isErr(store.ErrNotFound)},
		{"delete unknown stream", func() error {
			_, err := lifecycle.For(s).Delete(ctx, "default", "b", lifecycle.DeleteOptions{})
			return err
		}, isErr(store.ErrNotFound)},
		{"delete bad stream id", func() error {
			_, err := lifecycle.For(s).Delete(ctx, "default", "", lifecycle.DeleteOptions{})
			return err
		}, isErr(store.ErrInvalidEvent)},
		{"delete of no stream", func() error {
			_, err := lifecycle.For(s).Delete(ctx, "default", "a", lifecycle.DeleteOptions{Expected: store.NoStream})
			return err
		}, isInvalid("expected")},
		{"delete at a stale version", func() error {
			_, err := lifecycle.For(s).Delete(ctx, "default", "a", lifecycle.DeleteOptions{Expected: store.Exact(2)})
			return err
		}, isErr(store.ErrConflict)},
		{"truncate at a stale version", func() error { _, err := lifecycle.For(s).Truncate(ctx, "default", "a", 2, store.Exact(1)); return err }, isErr(store.ErrConflict)},
		{"delete with a cancelled context", func() error {
			_, err := lifecycle.For(s).Delete(cancelled, "default", "a", lifecycle.DeleteOptions{Hard: true})
			return err
		}, isErr(context.Canceled)},
		{"truncate with a cancelled context", func() error { _, err := lifecycle.For(s).Truncate(cancelled, "default", "a", 2, store.Any); return err }, isErr(context.Canceled)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.run(); !tc.want(err) {
				t.Fatalf("error %v", err)
			}
			if h, _ := s.Head(ctx); h != 3 {
				t.Fatalf("head = %d, want 3: something was written", h)
			}
			got, err := readErr(s, "a")
			if err != nil || len(got) != 3 {
				t.Fatalf("stream after refusal: %d events, %v", len(got), err)
			}
		})
	}
}

func testStreamsListsNoDeletedStream(t *testing.T, h Harness) {
	ctx := context.Background()
	s := h.Open(t, nil)
	FillStream(t, s, "a", 3)
	FillStream(t, s, "b", 1)
	FillStream(t, s, "c", 1)
	if _, err := lifecycle.For(s).Truncate(ctx, "default", "a", 3, store.Any); err != nil {
		t.Fatal(err)
	}
	if _, err := lifecycle.For(s).Delete(ctx, "default", "b", lifecycle.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := lifecycle.For(s).Delete(ctx, "default", "c", lifecycle.DeleteOptions{Hard: true}); err != nil {
		t.Fatal(err)
	}
	var got []store.StreamInfo
	for si, err := range s.Streams(ctx, "default") {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, si)
	}
	// a's first retained event is version 3, at position 3.
	if len(got) != 1 || got[0].Stream != "a" || got[0].FirstPosition != 3 || got[0].Version != 4 {
		t.Fatalf("streams = %+v, want only a, first position 3, version 4", got)
	}
}
