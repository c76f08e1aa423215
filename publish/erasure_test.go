package publish_test

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/eventlite/eventlite/publish"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/erasure"
)

// masterKey returns a master key made of b.
func masterKey(b byte) []byte { return bytes.Repeat([]byte{b}, erasure.MasterKeySize) }

// encryptedFile writes, with a master key, a plain event then an
// encrypted one (subject "alice") and returns the database's path.
func encryptedFile(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "eventlite.db")
	s, err := store.Open(ctx, path, &store.Options{MasterKey: masterKey(7), Synchronous: "NORMAL"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Append(ctx, "default", "plain", store.Any, newEvent(t, "test.happened", map[string]any{"n": 1})); err != nil {
		t.Fatal(err)
	}
	e := newEvent(t, "user.registered", map[string]any{"email": "alice@example.org"}).WithErasureKey("alice")
	if _, err := s.Append(ctx, "default", "alice", store.Any, e); err != nil {
		t.Fatal(err)
	}
	return path
}

// openAt opens the store at path with opts, closed when the test ends.
func openAt(t *testing.T, path string, opts *store.Options) *store.Store {
	t.Helper()
	s, err := store.Open(context.Background(), path, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestRelayRefusesEncryptedWithoutKey: a relay on a store opened without
// the master key (or with a wrong one) returns an error naming what to
// set instead of publishing encrypted events without their data; it
// publishes nothing of the batch and leaves the outbox as it was.
func TestRelayRefusesEncryptedWithoutKey(t *testing.T) {
	path := encryptedFile(t)
	// With a wrong master key the relay never starts: the store refuses
	// to open (a store uses one master key).
	var me *store.StoreMasterKeyError
	if s, err := store.Open(context.Background(), path, &store.Options{MasterKey: masterKey(8)}); !errors.As(err, &me) {
		if err == nil {
			s.Close()
		}
		t.Fatalf("open with a wrong master key: %v; want a *store.StoreMasterKeyError", err)
	}
	for _, c := range []struct {
		name  string
		opts  store.Options
		check func(t *testing.T, err error)
	}{
		{"no master key", store.Options{}, func(t *testing.T, err error) {
			var ee *store.EncryptedError
			if !errors.Is(err, store.ErrNoMasterKey) || !errors.As(err, &ee) || ee.Subject != "alice" || ee.Who != "relay" {
				t.Fatalf("Run: %v; want a *store.EncryptedError on subject alice, matching store.ErrNoMasterKey", err)
			}
			if !strings.Contains(err.Error(), "--master-key-file") || !strings.Contains(err.Error(), "Options.MasterKey") {
				t.Fatalf("Run: %v; want it to name Options.MasterKey and --master-key-file", err)
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := openAt(t, path, &c.opts)
			before := outboxEntries(t, s)
			var out bytes.Buffer
			r := newRelay(t, publish.Options{Store: s, Publisher: publish.NewStdout(&out), Once: true})
			// The deadline only ends a relay that would wait forever (the
			// failure this test guards against); it is not asserted.
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			err := r.Run(ctx)
			c.check(t, err)
			if out.Len() != 0 {
				t.Fatalf("published %q; want nothing", out.String())
			}
			if diff := cmp.Diff(before, outboxEntries(t, s)); diff != "" {
				t.Fatalf("outbox changed (-before +after):\n%s", diff)
			}
			for _, e := range outboxEntries(t, s) {
				if e.Attempts != 0 || !e.PublishedAt.IsZero() || !e.DeadAt.IsZero() {
					t.Fatalf("outbox row %+v: want pending, no attempt", e)
				}
			}
		})
	}
}

// TestRelayPublishesErasedWithoutKey: erased events (their subject was
// forgotten) are not encrypted ones: a relay without the master key
// publishes them, without data and marked dataerased.
func TestRelayPublishesErasedWithoutKey(t *testing.T) {
	path := encryptedFile(t)
	s := openAt(t, path, &store.Options{})
	if _, err := erasure.For(s).Forget(context.Background(), "default", "alice"); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	r := newRelay(t, publish.Options{Store: s, Publisher: publish.NewStdout(&out), Once: true})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := r.Run(ctx); err != nil {
		t.Fatalf("Run: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 || !strings.Contains(lines[1], `"dataerased":true`) || strings.Contains(out.String(), "alice@example.org") {
		t.Fatalf("published:\n%s\nwant 3 events, the second erased, no plaintext", out.String())
	}
}
