package projection_test

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/projection"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/erasure"
)

type userRegistered struct {
	Email string `json:"email"`
}

// typedUsers is a typed projection of user.registered and
// thing.happened; it records what its handlers receive in got.
func typedUsers(got *[]string) projection.Projection {
	var reg envelope.Registry
	envelope.Register[userRegistered](&reg, "user.registered")
	envelope.Register[map[string]int](&reg, "thing.happened")
	h := projection.NewHandlers(&reg)
	projection.On(h, func(ctx context.Context, tx *projection.Tx, e projection.Event[userRegistered]) error {
		*got = append(*got, e.Data.Email)
		return nil
	})
	projection.On(h, func(ctx context.Context, tx *projection.Tx, e projection.Event[map[string]int]) error {
		*got = append(*got, e.ID)
		return nil
	})
	return projection.Projection{Name: "users", Handlers: h}
}

// erasureFixture writes, with a master key: a plain event, caught up by
// the "counting" projection (checkpoint 1), then an encrypted event
// (subject alice) and another plain one. It returns the file's path.
func erasureFixture(t *testing.T, key []byte) string {
	t.Helper()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "eventlite.db")
	s, err := store.Open(ctx, path, &store.Options{MasterKey: key, Synchronous: "NORMAL"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	appendN(t, s, "plain", 1)
	catchUp(t, s, countingProjection("counting", nil))
	e, _ := envelope.New("user.registered", userRegistered{Email: "alice@example.org"})
	e.Source = "/test"
	if _, err := s.Append(ctx, "default", "alice", store.Any, e.WithErasureKey("alice")); err != nil {
		t.Fatal(err)
	}
	appendN(t, s, "plain", 1)
	return path
}

func catchUp(t *testing.T, s *store.Store, p projection.Projection) {
	t.Helper()
	r, err := projection.NewRunner(s, p, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.CatchUp(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestRunnerRefusesEncryptedWithoutKey: a runner on a store opened
// without the master key (or with a wrong one) stops with an error
// naming what to set instead of applying encrypted events without their
// data, untyped, typed or delivering: it applies nothing of the batch, quarantines
// nothing and leaves the checkpoint where it was.
func TestRunnerRefusesEncryptedWithoutKey(t *testing.T) {
	key := bytes.Repeat([]byte{3}, erasure.MasterKeySize)
	path := erasureFixture(t, key)
	// With a wrong master key no runner starts: the store refuses to
	// open (a store uses one master key).
	var me *store.StoreMasterKeyError
	if s, err := store.Open(context.Background(), path, &store.Options{MasterKey: bytes.Repeat([]byte{4}, erasure.MasterKeySize)}); !errors.As(err, &me) {
		if err == nil {
			s.Close()
		}
		t.Fatalf("open with a wrong master key: %v; want a *store.StoreMasterKeyError", err)
	}
	var got []string
	for _, c := range []struct {
		name  string
		opts  store.Options
		check func(t *testing.T, err error)
	}{
		{"no master key", store.Options{}, func(t *testing.T, err error) {
			var ee *store.EncryptedError
			if !errors.Is(err, store.ErrNoMasterKey) || !errors.As(err, &ee) || ee.Subject != "alice" || ee.Position != 2 {
				t.Fatalf("Run: %v; want a *store.EncryptedError on alice's event at position 2, matching store.ErrNoMasterKey", err)
			}
			if !strings.Contains(err.Error(), "Options.MasterKey") || !strings.Contains(err.Error(), "--master-key-file") {
				t.Fatalf("Run: %v; want it to name Options.MasterKey and --master-key-file", err)
			}
		}},
	} {
		deliver := projection.Projection{Name: "deliver", Deliver: func(ctx context.Context, e envelope.Event) error {
			got = append(got, e.ID) // a read model outside the store
			return nil
		}}
		for _, p := range []projection.Projection{countingProjection("counting", nil), typedUsers(&got), deliver} {
			t.Run(c.name+"/"+p.Name, func(t *testing.T) {
				s, err := store.Open(context.Background(), path, &c.opts)
				if err != nil {
					t.Fatal(err)
				}
				defer s.Close()
				before, err := projection.Records(s).Checkpoint(context.Background(), p.Name)
				if err != nil {
					t.Fatal(err)
				}
				r, err := projection.NewRunner(s, p, nil)
				if err != nil {
					t.Fatal(err)
				}
				// The deadline only ends a runner that would follow forever
				// (the failure guarded against); it is not asserted.
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				c.check(t, r.Run(ctx))
				if cp, err := projection.Records(s).Checkpoint(context.Background(), p.Name); err != nil || cp != before {
					t.Fatalf("checkpoint %d, %v; want it unchanged at %d", cp, err, before)
				}
				if q, err := projection.Quarantine(s).Events(context.Background(), projection.QuarantineFilter{}); err != nil || len(q) != 0 {
					t.Fatalf("quarantine: %+v, %v; want nothing", q, err)
				}
				if p.Name == "counting" {
					if a := applied(t, s, "counting_applied"); len(a) != 1 || a[1] != 1 {
						t.Fatalf("applied %v; want only position 1, once", a)
					}
				}
				if len(got) != 0 {
					t.Fatalf("typed handlers or Deliver received %v; want nothing", got)
				}
			})
		}
	}
}

// TestRunnerAppliesErasedWithoutKey: erased events are not encrypted
// ones: without the master key, a runner passes them as it does with it.
func TestRunnerAppliesErasedWithoutKey(t *testing.T) {
	path := erasureFixture(t, bytes.Repeat([]byte{3}, erasure.MasterKeySize))
	s, err := store.Open(context.Background(), path, &store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := erasure.For(s).Forget(context.Background(), "default", "alice"); err != nil {
		t.Fatal(err)
	}
	catchUp(t, s, countingProjection("counting", nil))
	if a := applied(t, s, "counting_applied"); len(a) != 4 {
		t.Fatalf("applied %v; want the 4 events (the erased one and the forget included)", a)
	}
	var got []string
	catchUp(t, s, typedUsers(&got))
	if len(got) != 2 || strings.Contains(strings.Join(got, " "), "alice") {
		t.Fatalf("typed handlers received %v; want the 2 plain events", got)
	}
}
