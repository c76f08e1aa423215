package erasure_test

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/drivertest"
	"github.com/eventlite/eventlite/store/erasure"
	_ "github.com/eventlite/eventlite/store/postgres" // PostgreSQL, when EVENTLITE_TEST_POSTGRES is set
	"github.com/eventlite/eventlite/store/storetest"
)

// engines opens a new store on each engine: a SQLite file, and a fresh
// PostgreSQL schema when EVENTLITE_TEST_POSTGRES is set (skipped
// otherwise).
var engines = []struct {
	name string
	addr func(testing.TB) string
}{
	{"sqlite", func(tb testing.TB) string { return filepath.Join(tb.TempDir(), "e.db") }},
	{"postgres", func(tb testing.TB) string { return storetest.PostgresSchema(tb, storetest.PostgresBase(tb)) }},
}

func openAt(tb testing.TB, addr string, opts *store.Options) *store.Store {
	tb.Helper()
	s, err := store.Open(context.Background(), addr, opts)
	if err != nil {
		tb.Fatalf("open store: %v", err)
	}
	tb.Cleanup(func() {
		if err := s.CheckInvariants(context.Background()); err != nil {
			tb.Errorf("after the test: %v", err)
		}
		if err := s.Close(); err != nil {
			tb.Errorf("close store: %v", err)
		}
	})
	return s
}

// TestHandleOnBothEngines drives the handle erasure.For returns on
// SQLite and PostgreSQL: Forget's result and the event it appends are
// the names this package exports (TypeSubjectForgotten, ForgottenStream,
// SubjectForgotten), Scrub counts what it removed, and store.Open takes
// a master key of MasterKeySize bytes and refuses another size.
func TestHandleOnBothEngines(t *testing.T) {
	for _, eng := range engines {
		t.Run(eng.name, func(t *testing.T) {
			ctx := context.Background()
			short := make([]byte, erasure.MasterKeySize-1)
			if s, err := store.Open(ctx, eng.addr(t), &store.Options{MasterKey: short}); !errors.Is(err, store.ErrMasterKey) {
				if err == nil {
					s.Close()
				}
				t.Fatalf("open with a master key of %d bytes: %v, want ErrMasterKey", len(short), err)
			}
			s := openAt(t, eng.addr(t), &store.Options{MasterKey: drivertest.MasterKey(t, 11)})
			e := erasure.For(s)
			if !e.HasMasterKey() {
				t.Fatal("HasMasterKey: false for a store opened with a key of MasterKeySize bytes")
			}
			if enc, err := e.Encrypted(ctx); err != nil || enc {
				t.Fatalf("Encrypted before any encrypted append: %v, %v; want false", enc, err)
			}
			for subject, email := range map[string]string{"alice": "alice.5e0d@example.org", "bob": "bob.19c2@example.org"} {
				if _, err := s.Append(ctx, "default", "user-"+subject, store.Any, drivertest.Personal(t, subject, email)); err != nil {
					t.Fatal(err)
				}
			}
			if enc, err := e.Encrypted(ctx); err != nil || !enc {
				t.Fatalf("Encrypted after encrypted appends: %v, %v; want true", enc, err)
			}

			res, err := e.Forget(ctx, "default", "alice")
			if err != nil {
				t.Fatal(err)
			}
			if res.Already || res.Tombstone || !slices.Equal(res.Streams, []string{"user-alice"}) ||
				res.Event.Type != erasure.TypeSubjectForgotten || res.Event.Stream != erasure.ForgottenStream {
				t.Fatalf("Forget: %+v; want stream user-alice and an %s event on %s", res, erasure.TypeSubjectForgotten, erasure.ForgottenStream)
			}
			d, err := envelope.DecodeData[erasure.SubjectForgotten](res.Event)
			if err != nil || d != (erasure.SubjectForgotten{ErasureKey: "alice"}) {
				t.Fatalf("the forgotten event's data: %+v, %v; want alice", d, err)
			}
			if got := drivertest.ReadStream(t, s, "default", erasure.ForgottenStream); len(got) != 1 || got[0].ID != res.Event.ID {
				t.Fatalf("%s holds %+v, want the event Forget returned", erasure.ForgottenStream, got)
			}
			if a := drivertest.ReadStream(t, s, "default", "user-alice"); len(a) != 1 || !envelope.Erased(a[0]) || a[0].Data != nil {
				t.Fatalf("alice's event after Forget: %+v, want erased", a)
			}
			if b := drivertest.ReadStream(t, s, "default", "user-bob"); len(b) != 1 || !strings.Contains(string(b[0].Data), "bob.19c2") {
				t.Fatalf("bob's event after alice's Forget: %+v", b)
			}
			if again, err := e.Forget(ctx, "default", "alice"); err != nil || !again.Already {
				t.Fatalf("Forget again: %+v, %v; want Already", again, err)
			}

			sr, err := e.Scrub(ctx)
			if err != nil || sr.Events != 1 || !sr.Checkpointed {
				t.Fatalf("Scrub: %+v, %v; want 1 event and the log checkpointed", sr, err)
			}
			if sr, err := e.Scrub(ctx); err != nil || sr.Events != 0 {
				t.Fatalf("Scrub again: %+v, %v; want nothing left to remove", sr, err)
			}
		})
	}
}
