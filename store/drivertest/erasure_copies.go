package drivertest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/internal/testhook"
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
		if _, err := other.Erasure().Forget(ctx, "default", "alice"); err != nil {
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
	if _, err := other.Erasure().Forget(ctx, "default", "bob"); err != nil {
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
