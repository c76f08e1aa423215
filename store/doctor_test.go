package store_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/eventlite/eventlite/internal/inside"

	"github.com/eventlite/eventlite/internal/outboxmark"
	"github.com/eventlite/eventlite/internal/projrow"
	"github.com/eventlite/eventlite/projection"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/drivertest"
	"github.com/eventlite/eventlite/store/effect"
)

func TestDiagnoseFindsPlantedDefects(t *testing.T) {
	ctx := context.Background()
	clock := drivertest.NewFakeClock(time.Now())
	path := filepath.Join(t.TempDir(), "defects.db")
	s, err := store.Open(ctx, path, &store.Options{Synchronous: "NORMAL", Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	// A relay ran once and released its lease cleanly.
	l, err := store.Inner(inside.Key{}, s).AcquireLease(ctx, "relay", "old-relay", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	_ = store.Inner(inside.Key{}, s).ReleaseLease(ctx, l)
	// Stale outbox rows, one dead letter parking its stream.
	drivertest.AppendEvents(t, s, "stale", 2)
	poison := drivertest.AppendEvents(t, s, "poison", 2)
	relay, _ := store.Inner(inside.Key{}, s).AcquireLease(ctx, "relay", "relay-2", 200*time.Millisecond)
	if err := s.Update(ctx, func(tx *store.Tx) error {
		return store.Bookkeeping(inside.Key{}, tx).DeadLetter(ctx, relay, []outboxmark.Failure{{Position: poison.FirstPosition(), Error: "message too large"}})
	}); err != nil {
		t.Fatal(err)
	}
	// Effects: one unknown, one stuck executing.
	_, _ = effect.For(s).Run(ctx, "default", "charge:1", func(ctx context.Context) (string, error) { return "", effect.ErrOutcomeUnknown })
	_, _, _ = effect.Steps(inside.Key{}, effect.For(s)).Reserve(ctx, "default", "email:1")
	_, _ = effect.Steps(inside.Key{}, effect.For(s)).Begin(ctx, "default", "email:1")
	// Consumer ledgers: an old deferral, a quarantined event, a conflict.
	err = s.Update(ctx, func(tx *store.Tx) error {
		if _, _, err := store.Bookkeeping(inside.Key{}, tx).Defer(ctx, inside.Deferred{Consumer: "c", Tenant: "default", Subject: "o-1", Version: 3, EventID: "e3",
			Event: []byte(`{}`), Expected: 2, FirstSeen: clock.Now(), Reason: "gap"}); err != nil {
			return err
		}
		if err := store.Bookkeeping(inside.Key{}, tx).Quarantine(ctx, projrow.Quarantined{Consumer: "c", Reason: string(projection.ReasonUninterpretable), EventID: "q1"}); err != nil {
			return err
		}
		if err := store.Bookkeeping(inside.Key{}, tx).RecordConflict(ctx, inside.Conflict{Consumer: "c", Tenant: "default", Subject: "o-1", Version: 2,
			KeptEventID: "a", ConflictingID: "b", ConflictingEvent: []byte(`{}`)}); err != nil {
			return err
		}
		// Projections: one stopped, one running but behind.
		if err := store.Bookkeeping(inside.Key{}, tx).SetProjectionStatus(ctx, "broken", string(projection.StatusStopped), "handler error"); err != nil {
			return err
		}
		return store.Bookkeeping(inside.Key{}, tx).SetProjectionStatus(ctx, "slow", string(projection.StatusActive), "")
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.Inner(inside.Key{}, s).AcquireLease(ctx, "projection:slow", "runner", time.Hour); err != nil {
		t.Fatal(err)
	}
	// A dead projection runner whose lease expired with work waiting.
	if _, err := store.Inner(inside.Key{}, s).AcquireLease(ctx, "projection:orphan", "dead-runner", 50*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Hour)
	// Damage behind the store's back: a hole and a version gap, and a
	// stream whose only event is gone (the newest of the log: no hole),
	// which reads as version 0 while its row says it exists.
	gappy := drivertest.AppendEvents(t, s, "gappy", 3)
	drivertest.AppendEvents(t, s, "tail", 1)
	gone := drivertest.AppendEvents(t, s, "gone", 1)
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		fmt.Sprintf(`DELETE FROM outbox WHERE position = %d`, gappy.Events[1].Position),
		fmt.Sprintf(`DELETE FROM events WHERE position = %d`, gappy.Events[1].Position),
		fmt.Sprintf(`DELETE FROM outbox WHERE position = %d`, gone.Events[0].Position),
		fmt.Sprintf(`DELETE FROM events WHERE position = %d`, gone.Events[0].Position),
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	// Wait for the short leases to expire on SQLite's clock.
	deadline := time.Now().Add(10 * time.Second)
	for {
		ls, _ := s.Leases().List(ctx)
		expired := 0
		for _, l := range ls {
			if l.Expired && l.Owner != "" {
				expired++
			}
		}
		if expired == 2 || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond) // polling a wall-clock expiry
	}

	got := drivertest.Problems(drivertest.Diagnose(t, s))
	want := map[string]int64{
		"outbox_stale": 3, "dead_letters": 1, "parked_streams": 1, "effects_unknown": 1, "effects_stuck": 1,
		"leases_expired": 2, "deferred_old": 1, "quarantined": 1, "version_conflicts": 1,
		"projections_stopped": 1, "projections_lagging": 1, "position_holes": 1, "stream_version_gaps": 2,
	}
	for kind, n := range want {
		f, ok := got[kind]
		if !ok {
			t.Errorf("planted %s not found", kind)
			continue
		}
		if f.Count != n || len(f.IDs) == 0 || f.Detail == "" {
			t.Errorf("%s: count %d (want %d), ids %v", kind, f.Count, n, f.IDs)
		}
	}
	for kind := range got {
		if _, ok := want[kind]; !ok {
			t.Errorf("unexpected finding %s: %+v", kind, got[kind])
		}
	}
	if f := got["dead_letters"]; len(f.IDs) == 1 && f.IDs[0] != "default:"+poison.Events[0].ID {
		t.Errorf("dead letter id %v", f.IDs)
	}
	if f := got["effects_stuck"]; f.OldestAgeSeconds < 3600 {
		t.Errorf("oldest age %v", f.OldestAgeSeconds)
	}
}
