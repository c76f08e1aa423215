package aggregate_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/eventlite/eventlite/aggregate"
	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/internal/inside"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/erasure"
	"github.com/eventlite/eventlite/store/storetest"
)

// TestOperationLedgerHashIsKeyedBySubject: the operation ledger's input
// hash of a command with an ErasureKey is keyed by the subject's data
// key, so it cannot confirm a guess of the input (the unsalted hash of a
// guessed email is not what is stored), a retry still replays, and after
// the forget a retry is refused (an *envelope.InvalidError on
// erasurekey) rather than confirmed or mismatched. SQLite and
// PostgreSQL.
func TestOperationLedgerHashIsKeyedBySubject(t *testing.T) {
	key := make([]byte, erasure.MasterKeySize)
	for i := range key {
		key[i] = byte(i*13 + 1)
	}
	opts := &store.Options{MasterKey: key}
	for _, engine := range []struct {
		name string
		open func(testing.TB) *store.Store
	}{
		{"sqlite", func(tb testing.TB) *store.Store { return storetest.MustOpen(tb, opts) }},
		{"postgres", func(tb testing.TB) *store.Store {
			addr := storetest.PostgresSchema(tb, storetest.PostgresBase(tb))
			s, err := store.Open(context.Background(), addr, opts)
			if err != nil {
				tb.Fatal(err)
			}
			tb.Cleanup(func() { _ = s.Close() })
			return s
		}},
	} {
		t.Run(engine.name, func(t *testing.T) {
			testOperationLedgerHashIsKeyed(t, engine.open(t))
		})
	}
}

func testOperationLedgerHashIsKeyed(t *testing.T, s *store.Store) {
	ctx := context.Background()
	h, err := aggregate.New(s, profileDef(), nil)
	if err != nil {
		t.Fatal(err)
	}
	cmd := aggregate.Command{Stream: "p-1", OperationID: "register-1", ErasureKey: "alice", Payload: Register{Email: "alice.guess@example.org"}}
	first, err := h.Handle(ctx, cmd)
	if err != nil {
		t.Fatal(err)
	}
	again, err := h.Handle(ctx, cmd)
	if err != nil || !again.Replayed || again.Version != first.Version {
		t.Fatalf("retry before the forget: %+v, %v; want the first result replayed", again, err)
	}
	other := cmd
	other.Payload = Register{Email: "someone.else@example.org"}
	if _, err := h.Handle(ctx, other); !errors.Is(err, store.ErrIdempotencyMismatch) {
		t.Fatalf("same operation id, other input: %v; want ErrIdempotencyMismatch", err)
	}
	guess, err := aggregate.InputHash(cmd.Stream, cmd.Payload)
	if err != nil {
		t.Fatal(err)
	}
	var stored string
	if err := s.Update(ctx, func(tx *store.Tx) error {
		op, ok, err := store.Bookkeeping(inside.Key{}, tx).Operation(ctx, "default", "register-1")
		if !ok && err == nil {
			err = errors.New("no ledger row")
		}
		stored = op.InputHash
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if stored == guess || strings.Contains(stored, guess) {
		t.Fatalf("the ledger stores the unsalted hash of the input (%s): a guess of the email is confirmed by it", stored)
	}
	if _, err := erasure.For(s).Forget(ctx, "default", "alice"); err != nil {
		t.Fatal(err)
	}
	var ie *envelope.InvalidError
	if _, err := h.Handle(ctx, cmd); !errors.As(err, &ie) || ie.Field != store.ExtErasureKey {
		t.Fatalf("retry after the forget: %v; want an *envelope.InvalidError on %s", err, store.ExtErasureKey)
	}
}
