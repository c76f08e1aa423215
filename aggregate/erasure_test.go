package aggregate_test

import (
	"context"
	"errors"
	"testing"

	"github.com/eventlite/eventlite/aggregate"
	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/erasure"
	"github.com/eventlite/eventlite/store/storetest"
)

type (
	// Register is a command and Registered its event: a person's email.
	Register struct{ Email string }
	// Registered is the event of a Register.
	Registered struct {
		Email string `json:"email"`
	}
	profile struct {
		Emails []string `json:"emails"`
		Erased int      `json:"erased"`
	}
)

// typedProfileDef is profileDef with a typed evolver and decider.
func typedProfileDef() aggregate.Definition[profile] {
	def := profileDef()
	def.Evolve, def.Decide = nil, nil
	def.Evolvers, def.Deciders = &aggregate.Evolvers[profile]{}, &aggregate.Deciders[profile]{}
	aggregate.On(def.Evolvers, func(s profile, e aggregate.EventOf[Registered]) profile {
		s.Emails = append(s.Emails, e.Payload.Email)
		return s
	})
	aggregate.OnCommand(def.Deciders, func(_ profile, c aggregate.CommandOf[Register]) ([]Registered, error) {
		return []Registered{{Email: c.Payload.Email}}, nil
	})
	return def
}

func profileDef() aggregate.Definition[profile] {
	var reg envelope.Registry
	envelope.Register[Registered](&reg, "profile.registered")
	return aggregate.Definition[profile]{
		Name:     "profile",
		Registry: &reg,
		Evolve: func(s profile, e aggregate.Event) profile {
			s.Emails = append(s.Emails, e.Payload.(Registered).Email)
			return s
		},
		Erased: func(s profile, e envelope.Event) profile {
			s.Erased++
			return s
		},
		Decide: func(s profile, c aggregate.Command) ([]any, error) {
			return []any{Registered{Email: c.Payload.(Register).Email}}, nil
		},
		SnapshotEvery: 1,
	}
}

// TestAggregateFoldsErasedEvents: a command's ErasureKey encrypts its
// events; after the subject is forgotten, Load folds them through the
// Erased hook (never Evolve), from the events, the snapshot holding the
// plaintext having been dropped. The typed form (aggregate.On) folds them
// through the same hook.
func TestAggregateFoldsErasedEvents(t *testing.T) {
	t.Run("untyped", func(t *testing.T) { testFoldsErased(t, profileDef) })
	t.Run("typed", func(t *testing.T) { testFoldsErased(t, typedProfileDef) })
}

func testFoldsErased(t *testing.T, profileDef func() aggregate.Definition[profile]) {
	ctx := context.Background()
	key := make([]byte, erasure.MasterKeySize)
	for i := range key {
		key[i] = byte(i * 7)
	}
	s := storetest.MustOpen(t, &store.Options{MasterKey: key})
	h, err := aggregate.New(s, profileDef(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, email := range []string{"a@x", "b@x"} {
		if _, err := h.Handle(ctx, aggregate.Command{Stream: "p-1", ErasureKey: "alice", Payload: Register{Email: email}}); err != nil {
			t.Fatal(err)
		}
	}
	for e, err := range s.ReadStream(ctx, "default", "p-1", store.ReadStreamOptions{}) {
		if err != nil || e.Extensions[store.ExtErasureKey] != "alice" {
			t.Fatalf("event of a command with ErasureKey: %+v, %v", e, err)
		}
	}
	st, v, err := h.Load(ctx, "default", "p-1")
	if err != nil || len(st.Emails) != 2 || st.Erased != 0 || v != 2 {
		t.Fatalf("before forget: %+v v%d, %v", st, v, err)
	}
	if _, err := erasure.For(s).Forget(ctx, "default", "alice"); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := s.Aggregates().LoadSnapshot(ctx, "default", "p-1", 1); ok {
		t.Fatal("the snapshot survived forget")
	}
	st, v, err = h.Load(ctx, "default", "p-1")
	if err != nil || len(st.Emails) != 0 || st.Erased != 2 || v != 2 {
		t.Fatalf("after forget: %+v v%d, %v; want two erased events folded, no emails", st, v, err)
	}
	// Without the hook, the state stays as it was before them.
	def := profileDef()
	def.Erased = nil
	plain, err := aggregate.New(s, def, nil)
	if err != nil {
		t.Fatal(err)
	}
	if st, v, err := plain.Load(ctx, "default", "p-1"); err != nil || len(st.Emails) != 0 || v != 2 {
		t.Fatalf("no hook: %+v v%d, %v", st, v, err)
	}
	// A new command goes on after the erased events.
	if _, err := h.Handle(ctx, aggregate.Command{Stream: "p-1", ErasureKey: "alice-2", Payload: Register{Email: "c@x"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Handle(ctx, aggregate.Command{Stream: "p-1", ErasureKey: "alice", Payload: Register{Email: "d@x"}}); !errors.Is(err, store.ErrInvalidEvent) {
		t.Fatalf("a command under a forgotten subject: %v, want ErrInvalidEvent", err)
	}
}
