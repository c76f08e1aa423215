package drivertest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/erasure"
	"github.com/eventlite/eventlite/store/internal/testhook"
	"github.com/eventlite/eventlite/store/lifecycle"
	"github.com/eventlite/eventlite/store/storetest"
)

// testForgetBeatsACachedKey: another store (process) forgets a subject
// while this one holds the subject's key in its cache. The forget
// commits after this store's append sealed its data with the cached key
// and before the append reaches the writer (a test hook puts it there);
// the append must be refused, whatever the cache (and SQLite's
// stream-state cache, warm for the stream) holds. Then the same through
// an Update closure, whose key lookup also reads the cache first.
func testForgetBeatsACachedKey(t *testing.T, h Harness) {
	ctx := context.Background()
	// A poll interval far past the test: only the append's own check can
	// see the other store's forget (PostgreSQL's notifications may still
	// wake the poller: the hook does not depend on it being slow).
	opts := &store.Options{MasterKey: MasterKey(t, 36), PollInterval: time.Hour}
	keyed := h.Open(t, opts)
	for _, subject := range []string{"alice", "bob"} {
		for range 2 { // the second append runs on a warm stream-state cache
			if _, err := keyed.Append(ctx, "default", "user-"+subject, store.Any, Personal(t, subject, subject+"@example.org")); err != nil {
				t.Fatal(err)
			}
		}
	}
	other := h.reopen(t, keyed, nil)

	fired := false
	remove := testhook.SetAppendSealed(func(tenant, stream string) {
		if fired || stream != "user-alice" {
			return
		}
		fired = true
		if _, err := erasure.For(other).Forget(ctx, "default", "alice"); err != nil {
			t.Errorf("forget by the other store: %v", err)
		}
	})
	_, err := keyed.Append(ctx, "default", "user-alice", store.Any, Personal(t, "alice", "alice.late@example.org"))
	remove()
	if !fired {
		t.Fatal("the hook never ran: the append did not seal")
	}
	var ie *envelope.InvalidError
	if !errors.As(err, &ie) || ie.Field != store.ExtErasureKey {
		t.Fatalf("append after another store's forget, with the key cached: %v, want an *envelope.InvalidError on %s", err, store.ExtErasureKey)
	}
	evs := ReadStream(t, other, "default", "user-alice")
	if len(evs) != 2 {
		t.Fatalf("user-alice holds %d events after the refused append, want 2", len(evs))
	}
	for _, e := range evs {
		if !envelope.Erased(e) {
			t.Errorf("event %d of the forgotten subject reads with data %s", e.StreamVersion, e.Data)
		}
	}

	// Inside an Update closure: bob's key is cached too.
	if _, err := erasure.For(other).Forget(ctx, "default", "bob"); err != nil {
		t.Fatal(err)
	}
	err = keyed.Update(ctx, func(tx *store.Tx) error {
		_, err := tx.Append(ctx, "default", "user-bob", store.Any, Personal(t, "bob", "bob.late@example.org"))
		return err
	})
	if !errors.As(err, &ie) || ie.Field != store.ExtErasureKey {
		t.Fatalf("tx.Append after another store's forget, with the key cached: %v, want an *envelope.InvalidError on %s", err, store.ExtErasureKey)
	}
	if evs := ReadStream(t, other, "default", "user-bob"); len(evs) != 2 {
		t.Fatalf("user-bob holds %d events after the refused append, want 2", len(evs))
	}
}

// testForgetDropsSnapshotsAfterScavenge: forget finds a subject's
// streams through a record that outlives their events. A snapshot holds
// state derived from the subject's data; a truncate and a scavenge then
// remove every event of the subject; forget must still name the stream
// and drop the snapshot.
func testForgetDropsSnapshotsAfterScavenge(t *testing.T, h Harness) {
	ctx := context.Background()
	s := h.Open(t, &store.Options{MasterKey: MasterKey(t, 362)})
	for i := range 3 {
		if _, err := s.Append(ctx, "default", "profile-1", store.Any, Personal(t, "alice", fmt.Sprintf("alice.%d@example.org", i))); err != nil {
			t.Fatal(err)
		}
	}
	FillStream(t, s, "profile-1", 1) // version 4, no subject
	state := []byte(`{"email":"alice.2@example.org"}`)
	if err := s.Update(ctx, func(tx *store.Tx) error {
		return tx.SaveSnapshot(ctx, store.Snapshot{Tenant: "default", Stream: "profile-1", SchemaVersion: 1, Version: 4, State: state})
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := lifecycle.For(s).Truncate(ctx, "default", "profile-1", 4, store.Any); err != nil {
		t.Fatal(err)
	}
	storetest.PublishAll(t, s)
	if res := Scavenge(t, s, lifecycle.ScavengeOptions{}); res.Removed != 3 {
		t.Fatalf("scavenge removed %d events, want alice's 3", res.Removed)
	}
	res, err := erasure.For(s).Forget(ctx, "default", "alice")
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Streams) != 1 || res.Streams[0] != "profile-1" {
		t.Errorf("forget found streams %q, want [profile-1] (its events were scavenged)", res.Streams)
	}
	if snap, ok, err := s.Aggregates().LoadSnapshot(ctx, "default", "profile-1", 1); err != nil || ok {
		t.Fatalf("snapshot after forget: %q found %v (%v); want it dropped", snap.State, ok, err)
	}
}
