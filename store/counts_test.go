package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/eventlite/eventlite/internal/inside"
	"github.com/eventlite/eventlite/internal/projrow"
	"github.com/eventlite/eventlite/projection"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/drivertest"
	"github.com/eventlite/eventlite/store/effect"
	"github.com/eventlite/eventlite/store/storetest"
)

// Counts counts what is open and leaves out what was resolved or taken,
// on both engines (PostgreSQL with EVENTLITE_TEST_POSTGRES): the
// statements are one, in the drivers' shared code.
func TestCounts(t *testing.T) {
	t.Parallel()
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		testCounts(t, func(opts *store.Options) *store.Store { return storetest.MustOpen(t, opts) })
	})
	t.Run("postgres", func(t *testing.T) {
		base := storetest.PostgresBase(t)
		t.Parallel()
		testCounts(t, func(opts *store.Options) *store.Store {
			s, err := store.Open(context.Background(), storetest.PostgresSchema(t, base), opts)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		})
	})
}

func testCounts(t *testing.T, open func(*store.Options) *store.Store) {
	ctx := context.Background()
	clock := drivertest.NewFakeClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	s := open(&store.Options{Now: clock.Now})
	got, err := s.Inventory().Counts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(store.Counts{Effects: map[string]int64{}, EffectsByKind: map[string]map[string]int64{}}, got); diff != "" {
		t.Errorf("empty store (-want +got):\n%s", diff)
	}

	err = s.Update(ctx, func(tx *store.Tx) error {
		for i := range 3 {
			if err := store.Bookkeeping(inside.Key{}, tx).Quarantine(ctx, projrow.Quarantined{Consumer: "c", Reason: string(projection.ReasonUninterpretable), EventID: fmt.Sprintf("q%d", i), Position: int64(i + 1)}); err != nil {
				return err
			}
			if _, _, err := store.Bookkeeping(inside.Key{}, tx).Defer(ctx, inside.Deferred{Consumer: "c", Tenant: "default", Subject: "o-1", Version: int64(3 + i), EventID: fmt.Sprintf("e%d", i),
				Event: []byte(`{}`), Expected: 2, FirstSeen: time.Now(), Reason: "gap"}); err != nil {
				return err
			}
		}
		if err := store.Bookkeeping(inside.Key{}, tx).RecordConflict(ctx, inside.Conflict{Consumer: "c", Tenant: "default", Subject: "o-1", Version: 2,
			KeptEventID: "a", ConflictingID: "b", ConflictingEvent: []byte(`{}`)}); err != nil {
			return err
		}
		// One quarantine entry resolved, one deferral taken.
		if err := store.Bookkeeping(inside.Key{}, tx).ResolveQuarantine(ctx, "c", 1, ""); err != nil {
			return err
		}
		_, _, err := store.Bookkeeping(inside.Key{}, tx).TakeDeferred(ctx, "default", "c", "o-1", 3)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"a", "b"} {
		if _, _, err := effect.Steps(inside.Key{}, effect.For(s)).Reserve(ctx, "default", key); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := effect.For(s).Run(ctx, "default", "c", func(context.Context) (string, error) { return "ref", nil }); err != nil {
		t.Fatal(err)
	}
	// Two effects wait for a person, the older since clock - 90s.
	for _, key := range []string{"d", "e"} {
		if _, err := effect.For(s).Do(ctx, effect.Intent{Tenant: "default", Key: key, Kind: effect.Irreversible, NeedsApproval: true, RequestedBy: "svc"},
			func(context.Context, json.RawMessage) (string, error) { return "", nil }); !errors.Is(err, effect.ErrAwaitingApproval) {
			t.Fatal(err)
		}
		clock.Advance(90 * time.Second)
	}
	got, err = s.Inventory().Counts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := store.Counts{Quarantined: 2, Deferred: 2, Conflicts: 1,
		Effects: map[string]int64{string(effect.Reserved): 2, string(effect.Completed): 1, string(effect.AwaitingApproval): 2},
		EffectsByKind: map[string]map[string]int64{
			string(effect.External):     {string(effect.Reserved): 2, string(effect.Completed): 1},
			string(effect.Irreversible): {string(effect.AwaitingApproval): 2},
		},
		AwaitingApprovalAge: 180 * time.Second}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("counts (-want +got):\n%s", diff)
	}
	// Each figure agrees with the listing it replaces.
	qs, err := projection.Quarantine(s).Events(ctx, projection.QuarantineFilter{Open: true})
	if err != nil {
		t.Fatal(err)
	}
	ds, err := projection.Consumers(s).Deferred(ctx, "", time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	cs, err := projection.Consumers(s).Conflicts(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(qs) != int(got.Quarantined) || len(ds) != int(got.Deferred) || len(cs) != int(got.Conflicts) {
		t.Errorf("listings: %d quarantined, %d deferred, %d conflicts; counts %+v", len(qs), len(ds), len(cs), got)
	}

	closed, err := store.Open(ctx, filepath.Join(t.TempDir(), "closed.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	closed.Close()
	if _, err := closed.Inventory().Counts(ctx); !errors.Is(err, store.ErrClosed) {
		t.Errorf("Counts on a closed store: %v, want ErrClosed", err)
	}
}
