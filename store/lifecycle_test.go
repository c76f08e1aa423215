package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"testing"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/storetest"
)

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

func TestSoftDelete(t *testing.T) {
	ctx := context.Background()
	s := storetest.MustOpen(t, nil)
	fillStream(t, s, "order-1", 4)
	err := s.Update(ctx, func(tx *store.Tx) error {
		return tx.SaveSnapshot(ctx, store.Snapshot{Tenant: "default", Stream: "order-1", SchemaVersion: 1, Version: 4, State: []byte("{}")})
	})
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Lifecycle().Delete(ctx, "default", "order-1", store.DeleteOptions{Reason: "gdpr", By: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Version != 5 || len(res.Events) != 1 || res.Events[0].Type != store.TypeStreamDeleted {
		t.Fatalf("delete result = version %d, %d events", res.Version, len(res.Events))
	}
	var d store.StreamDeleted
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
	if len(types) != 5 || types[4] != store.TypeStreamDeleted {
		t.Fatalf("log after delete: %v", types)
	}
	// The relay publishes the tombstone like any other event.
	rows, err := s.Outbox().Read(ctx, store.OutboxReadOptions{})
	if err != nil || len(rows) != 5 || rows[4].Event.Type != store.TypeStreamDeleted {
		t.Fatalf("outbox after delete: %d rows, %v", len(rows), err)
	}
	// Deleting it again: it is absent.
	if _, err := s.Lifecycle().Delete(ctx, "default", "order-1", store.DeleteOptions{}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("second delete: %v, want ErrNotFound", err)
	}
	// exists and N conflict with actual 0.
	for _, exp := range []store.Expected{store.StreamExists, store.Exact(5)} {
		_, err := s.Append(ctx, "default", "order-1", exp, ev(t, "t", nil))
		var ce *store.ConflictError
		if !errors.As(err, &ce) || ce.Actual != 0 {
			t.Fatalf("append %v after soft delete: %v, want a conflict with actual 0", exp, err)
		}
	}
	// no-stream continues after the tombstone's version; reads start there.
	res, err = s.Append(ctx, "default", "order-1", store.NoStream, ev(t, "t", nil))
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

func TestSoftDeleteThenAny(t *testing.T) {
	ctx := context.Background()
	s := storetest.MustOpen(t, nil)
	fillStream(t, s, "a", 2)
	if _, err := s.Lifecycle().Delete(ctx, "default", "a", store.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	res, err := s.Append(ctx, "default", "a", store.Any, ev(t, "t", nil))
	if err != nil || res.Version != 4 {
		t.Fatalf("any append after tombstone at 3: version %d, %v; want 4", res.Version, err)
	}
}

func TestHardDelete(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "eventlite.db")
	s, err := store.Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	fillStream(t, s, "a", 2)
	res, err := s.Lifecycle().Delete(ctx, "default", "a", store.DeleteOptions{Hard: true, By: "bob"})
	if err == nil {
		err = s.CheckInvariants(ctx)
	}
	if err != nil || res.Version != 3 {
		t.Fatalf("hard delete: %d, %v", res.Version, err)
	}
	for _, exp := range []store.Expected{store.Any, store.NoStream, store.StreamExists, store.Exact(3)} {
		if _, err := s.Append(ctx, "default", "a", exp, ev(t, "t", nil)); !errors.Is(err, store.ErrStreamDeleted) {
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
		if _, err := s.Lifecycle().Delete(ctx, "default", "a", store.DeleteOptions{Hard: hard}); !errors.Is(err, store.ErrStreamDeleted) {
			t.Fatalf("delete again (hard %v): %v, want ErrStreamDeleted", hard, err)
		}
	}
	if _, err := s.Lifecycle().Truncate(ctx, "default", "a", 2, store.Any); !errors.Is(err, store.ErrStreamDeleted) {
		t.Fatalf("truncate: %v, want ErrStreamDeleted", err)
	}
	if h, _ := s.Head(ctx); h != 3 {
		t.Fatalf("head = %d after refused writes, want 3", h)
	}
	// Never writable again: also after a restart.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = storetest.MustOpenPath(t, path, nil)
	if _, err := s.Append(ctx, "default", "a", store.Any, ev(t, "t", nil)); !errors.Is(err, store.ErrStreamDeleted) {
		t.Fatalf("append after a restart: %v, want ErrStreamDeleted", err)
	}
}

func TestTruncate(t *testing.T) {
	ctx := context.Background()
	s := storetest.MustOpen(t, nil)
	fillStream(t, s, "a", 5)
	res, err := s.Lifecycle().Truncate(ctx, "default", "a", 4, store.Exact(5))
	if err != nil || res.Version != 6 || res.Events[0].Type != store.TypeStreamTruncated || string(res.Events[0].Data) != `{"before":4}` {
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
	if _, err := s.Lifecycle().Truncate(ctx, "default", "a", 3, store.Any); !isInvalid("before")(err) {
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

// Bad input is a typed error and changes nothing.
func TestLifecycleBadInputChangesNothing(t *testing.T) {
	ctx := context.Background()
	s := storetest.MustOpen(t, nil)
	fillStream(t, s, "a", 3)
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	cases := []struct {
		name string
		run  func() error
		want func(error) bool
	}{
		{"truncate before 1", func() error { _, err := s.Lifecycle().Truncate(ctx, "default", "a", 1, store.Any); return err }, isInvalid("before")},
		{"truncate beyond the head", func() error { _, err := s.Lifecycle().Truncate(ctx, "default", "a", 4, store.Any); return err }, isInvalid("before")},
		{"truncate unknown stream", func() error { _, err := s.Lifecycle().Truncate(ctx, "default", "b", 2, store.Any); return err }, isErr(store.ErrNotFound)},
		{"delete unknown stream", func() error { _, err := s.Lifecycle().Delete(ctx, "default", "b", store.DeleteOptions{}); return err }, isErr(store.ErrNotFound)},
		{"delete bad stream id", func() error { _, err := s.Lifecycle().Delete(ctx, "default", "", store.DeleteOptions{}); return err }, isErr(store.ErrInvalidEvent)},
		{"delete of no stream", func() error {
			_, err := s.Lifecycle().Delete(ctx, "default", "a", store.DeleteOptions{Expected: store.NoStream})
			return err
		}, isInvalid("expected")},
		{"delete at a stale version", func() error {
			_, err := s.Lifecycle().Delete(ctx, "default", "a", store.DeleteOptions{Expected: store.Exact(2)})
			return err
		}, isErr(store.ErrConflict)},
		{"truncate at a stale version", func() error { _, err := s.Lifecycle().Truncate(ctx, "default", "a", 2, store.Exact(1)); return err }, isErr(store.ErrConflict)},
		{"delete with a cancelled context", func() error {
			_, err := s.Lifecycle().Delete(cancelled, "default", "a", store.DeleteOptions{Hard: true})
			return err
		}, isErr(context.Canceled)},
		{"truncate with a cancelled context", func() error { _, err := s.Lifecycle().Truncate(cancelled, "default", "a", 2, store.Any); return err }, isErr(context.Canceled)},
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

func isErr(target error) func(error) bool {
	return func(err error) bool { return errors.Is(err, target) }
}

func isInvalid(field string) func(error) bool {
	return func(err error) bool {
		var ie *envelope.InvalidError
		return errors.As(err, &ie) && ie.Field == field
	}
}

func TestStreamsListsNoDeletedStream(t *testing.T) {
	ctx := context.Background()
	s := storetest.MustOpen(t, nil)
	fillStream(t, s, "a", 3)
	fillStream(t, s, "b", 1)
	fillStream(t, s, "c", 1)
	if _, err := s.Lifecycle().Truncate(ctx, "default", "a", 3, store.Any); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Lifecycle().Delete(ctx, "default", "b", store.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Lifecycle().Delete(ctx, "default", "c", store.DeleteOptions{Hard: true}); err != nil {
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
