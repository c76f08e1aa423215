package drivertest

import (
	"context"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/erasure"
)

// MasterKey returns a master key drawn from a seeded generator (the
// seed is logged).
func MasterKey(t testing.TB, seed uint64) []byte {
	t.Helper()
	t.Logf("master key seed %d", seed)
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	k := make([]byte, erasure.MasterKeySize)
	for i := range k {
		k[i] = byte(r.UintN(256))
	}
	return k
}

// Personal is an event of subject's carrying a value that must never be
// stored in clear.
func Personal(t testing.TB, subject, email string) envelope.Event {
	t.Helper()
	return Event(t, "user.registered", map[string]string{"email": email}).WithErasureKey(subject)
}

func testErasureRetryComparesPlaintext(t *testing.T, h Harness) {
	ctx := context.Background()
	s := h.Open(t, &store.Options{MasterKey: MasterKey(t, 6)})
	e := Personal(t, "alice", "a@example.org")
	e.ID = "01J0000000000000000000RTRY"
	first, err := s.Append(ctx, "default", "user-1", store.NoStream, e)
	if err != nil {
		t.Fatal(err)
	}
	again, err := s.Append(ctx, "default", "user-1", store.NoStream, e)
	if err != nil || !again.Replayed || again.Version != first.Version || !strings.Contains(string(again.Events[0].Data), "a@example.org") {
		t.Fatalf("retry of an encrypted append: %+v, %v; want the first result replayed, with the plaintext", again, err)
	}
	other := Personal(t, "alice", "b@example.org")
	other.ID = e.ID
	if _, err := s.Append(ctx, "default", "user-1", store.Any, other); !errors.Is(err, store.ErrDuplicate) {
		t.Fatalf("same id, other data: %v, want ErrDuplicate", err)
	}
	unsealed := Event(t, "user.registered", map[string]string{"email": "a@example.org"})
	unsealed.ID = e.ID
	if _, err := s.Append(ctx, "default", "user-1", store.Any, unsealed); !errors.Is(err, store.ErrDuplicate) {
		t.Fatalf("same id and data without erasurekey: %v, want ErrDuplicate", err)
	}
}

func testErasureDataLimitIsOnPlaintext(t *testing.T, h Harness) {
	ctx := context.Background()
	s := h.Open(t, &store.Options{MasterKey: MasterKey(t, 7), MaxDataBytes: 64})
	fits := Event(t, "t", strings.Repeat("x", 62)).WithErasureKey("alice") // "…" is 64 bytes
	if _, err := s.Append(ctx, "default", "s", store.Any, fits); err != nil {
		t.Fatalf("64 bytes of plaintext under a 64-byte limit (the ciphertext is longer): %v", err)
	}
	over := Event(t, "t", strings.Repeat("x", 63)).WithErasureKey("alice")
	if _, err := s.Append(ctx, "default", "s", store.Any, over); !errors.Is(err, store.ErrTooLarge) {
		t.Fatalf("65 bytes of plaintext: %v, want ErrTooLarge", err)
	}
}

func testErasureRefusesStoreExtensions(t *testing.T, h Harness) {
	ctx := context.Background()
	s := h.Open(t, &store.Options{MasterKey: MasterKey(t, 8)})
	for name, v := range map[string]any{store.ExtDataErased: true, store.ExtDataEncrypted: true, store.ExtErasureKey: int32(3)} {
		e := Event(t, "t", 1)
		e.Extensions = map[string]any{name: v}
		var ie *envelope.InvalidError
		if _, err := s.Append(ctx, "default", "s", store.Any, e); !errors.As(err, &ie) || ie.Field != name {
			t.Errorf("append with %s=%v: %v, want an *InvalidError on %s", name, v, err, name)
		}
	}
}

func testForgetNeedsNoMasterKeyAndIsSeenByAnotherStore(t *testing.T, h Harness) {
	ctx := context.Background()
	keyed := h.Open(t, &store.Options{MasterKey: MasterKey(t, 10)})
	if _, err := keyed.Append(ctx, "default", "user-1", store.Any, Personal(t, "alice", "a@x")); err != nil {
		t.Fatal(err)
	}
	if evs := ReadStream(t, keyed, "default", "user-1"); envelope.Erased(evs[0]) { // the key is now cached
		t.Fatal("erased before forget")
	}
	other := h.reopen(t, keyed, nil) // another process would do the same
	if _, err := erasure.For(other).Forget(ctx, "default", "alice"); err != nil {
		t.Fatal(err)
	}
	// keyed's poller sees the commit and drops its cached key; wait for
	// the store to notice the commit (its change notification).
	for {
		changed := keyed.Changed()
		evs := ReadStream(t, keyed, "default", "user-1")
		if envelope.Erased(evs[0]) {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("the forget made by another store never became visible")
		}
		<-changed
	}
}
