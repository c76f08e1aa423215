package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/internal/inside"
	"github.com/eventlite/eventlite/internal/outboxmark"
	"github.com/eventlite/eventlite/internal/projrow"
	"github.com/eventlite/eventlite/projection"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/backup"
	"github.com/eventlite/eventlite/store/drivertest"
	"github.com/eventlite/eventlite/store/effect"
	"github.com/eventlite/eventlite/store/erasure"
	"github.com/eventlite/eventlite/store/lifecycle"
	"github.com/eventlite/eventlite/store/storetest"
)

// TestErasureReachesEveryCopy is the byte search of issue 36 over every
// place the store copies a subject's data to: a relay's failure text
// (outbox.last_error, kept after the row was published), a quarantined
// copy and its error text, a consumer's deferral buffer, a snapshot and
// an effect's arguments and error text. Each place first gets its own
// marker of alice's plaintext, and the search finds each in the file
// (the effect's never: it is sealed from the start). After Forget and a
// scavenge with Vacuum, no marker is in the database file, its WAL, or a
// backup taken afterwards; bob's data is untouched.
func TestErasureReachesEveryCopy(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "copies.db")
	s := storetest.MustOpenPath(t, path, &store.Options{MasterKey: drivertest.MasterKey(t, 3601)})
	marker := map[string]string{
		"outbox":     "alice-outbox.8d1@example.org",
		"quarantine": "alice-quarantine.8d1@example.org",
		"deferral":   "alice-deferral.8d1@example.org",
		"snapshot":   "alice-snapshot.8d1@example.org",
		"effect":     "alice-effect.8d1@example.org",
	}
	bob := "bob-kept.8d1@example.org"
	res, err := s.Append(ctx, "default", "user-alice", store.NoStream,
		drivertest.Personal(t, "alice", marker["quarantine"]), drivertest.Personal(t, "alice", marker["deferral"]))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Append(ctx, "default", "user-bob", store.NoStream, drivertest.Personal(t, "bob", bob)); err != nil {
		t.Fatal(err)
	}
	evJSON := func(e envelope.Event) []byte {
		b, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	lease, err := store.Inner(inside.Key{}, s).AcquireLease(ctx, "relay", "r1", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	err = s.Update(ctx, func(tx *store.Tx) error {
		b := store.Bookkeeping(inside.Key{}, tx)
		// A sink refused the event quoting it; the retry published it.
		if err := b.RecordFailure(ctx, lease, []outboxmark.Failure{{Position: res.FirstPosition(), Error: "422: bad email " + marker["outbox"]}}); err != nil {
			return err
		}
		if _, err := b.MarkPublished(ctx, lease, []outboxmark.Published{{Position: res.FirstPosition()}}); err != nil {
			return err
		}
		if err := b.Quarantine(ctx, projrow.Quarantined{Consumer: "users", Reason: string(projection.ReasonHandlerError), Tenant: "default", Subject: "user-alice", Version: 1,
			Position: res.FirstPosition(), EventID: res.Events[0].ID, Event: evJSON(res.Events[0]), Error: "handler choked on " + marker["quarantine"], Attempts: 1}); err != nil {
			return err
		}
		if _, _, err := b.Defer(ctx, inside.Deferred{Tenant: "default", Consumer: "mailer", Subject: "user-alice", Version: 9,
			EventID: res.Events[1].ID, Event: evJSON(res.Events[1]), Reason: "gap"}); err != nil {
			return err
		}
		return tx.SaveSnapshot(ctx, store.Snapshot{Tenant: "default", Stream: "user-alice", SchemaVersion: 1, Version: 2,
			State: []byte(`{"email":"` + marker["snapshot"] + `"}`)})
	})
	if err != nil {
		t.Fatal(err)
	}
	_, err = effect.For(s).Do(ctx, effect.Intent{Tenant: "default", Key: "welcome-alice", Args: map[string]string{"to": marker["effect"]}, ErasureKey: "alice"},
		func(ctx context.Context, args json.RawMessage) (string, error) {
			return "", errors.New("mailer said: no such mailbox " + marker["effect"])
		})
	if err == nil {
		t.Fatal("the effect's call failed, Do did not say so")
	}
	if ok, err := store.CheckpointTruncate(ctx, s); err != nil || !ok {
		t.Fatalf("checkpoint: %v %v", ok, err)
	}
	for place, m := range marker {
		in := holds(t, []byte(m), path)
		if place == "effect" && len(in) > 0 {
			t.Errorf("the effect's arguments or error text are in clear in %v before any forget", in)
		}
		if place != "effect" && len(in) == 0 {
			t.Fatalf("the %s copy's plaintext is not found in the file: the byte search does not work there", place)
		}
	}

	fr, err := erasure.For(s).Forget(ctx, "default", "alice")
	if err != nil {
		t.Fatal(err)
	}
	if fr.Copies != 2 {
		t.Errorf("Forget erased %d copies, want 2 (quarantine, deferral)", fr.Copies)
	}
	sr, err := lifecycle.For(s).Scavenge(ctx, lifecycle.ScavengeOptions{Vacuum: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("scavenge --vacuum: %+v", sr)
	after := filepath.Join(dir, "after.db")
	if _, err := backup.Create(ctx, path, after, nil); err != nil {
		t.Fatal(err)
	}
	for place, m := range marker {
		if in := holds(t, []byte(m), path, after); len(in) > 0 {
			t.Errorf("after forget and scavenge --vacuum, the %s copy's plaintext is still in %v", place, in)
		}
	}
	if in := holds(t, []byte(bob), path, after); len(in) > 0 {
		// bob's event is encrypted: in clear nowhere, as before.
		t.Errorf("bob's plaintext is in %v", in)
	}
	if evs := drivertest.ReadStream(t, s, "default", "user-bob"); len(evs) != 1 || string(evs[0].Data) != `{"email":"`+bob+`"}` {
		t.Errorf("bob after alice's forget: %+v", evs)
	}
	if e, _, err := effect.For(s).Get(ctx, "default", "welcome-alice"); err != nil || !e.ArgsErased {
		t.Errorf("the effect after the forget: %+v, %v; want its arguments erased", e, err)
	}
}
