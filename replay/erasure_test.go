package replay_test

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/projection"
	"github.com/eventlite/eventlite/replay"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/erasure"
	"github.com/eventlite/eventlite/store/storetest"
)

type registered struct {
	Email string `json:"email"`
}

// emails is a typed read model of users' emails that purges a subject
// on eventlite.subject.forgotten, and counts in typedCalls the events
// its typed handler received.
func emails(typedCalls, erasedCalls *[]string) projection.Projection {
	var reg envelope.Registry
	envelope.Register[registered](&reg, "user.registered")
	envelope.Register[erasure.SubjectForgotten](&reg, erasure.TypeSubjectForgotten)
	h := projection.NewHandlers(&reg)
	const schema = `CREATE TABLE {table} (tenant TEXT NOT NULL, subject TEXT NOT NULL, email TEXT NOT NULL)`
	projection.On(h, func(ctx context.Context, tx *projection.Tx, e projection.Event[registered]) error {
		*typedCalls = append(*typedCalls, e.ID)
		_, err := tx.ExecContext(ctx, `INSERT INTO `+tx.Table("emails")+` VALUES (?, ?, ?)`, e.Tenant, e.Stream, e.Data.Email)
		return err
	})
	projection.On(h, func(ctx context.Context, tx *projection.Tx, e projection.Event[erasure.SubjectForgotten]) error {
		_, err := tx.ExecContext(ctx, `DELETE FROM `+tx.Table("emails")+` WHERE tenant = ? AND subject = ?`, e.Tenant, e.Data.ErasureKey)
		return err
	})
	h.OnErased(func(ctx context.Context, tx *projection.Tx, e envelope.Event) error {
		*erasedCalls = append(*erasedCalls, e.ID)
		return nil
	})
	return projection.Projection{Name: "emails", Handlers: h, Tables: []projection.Table{{Name: "emails", Schema: schema}}}
}

// TestErasedEventsInProjections: typed handlers never receive erased
// events (the erased hook does), untyped ones receive them as read,
// nothing quarantines or stops on them, and a rebuild after the forget
// equals the live read model, which purged the subject on
// eventlite.subject.forgotten.
func TestErasedEventsInProjections(t *testing.T) {
	ctx := context.Background()
	key := make([]byte, erasure.MasterKeySize)
	for i := range key {
		key[i] = byte(255 - i)
	}
	s := storetest.MustOpen(t, &store.Options{MasterKey: key})
	add := func(subject, email string) envelope.Event {
		e, err := envelope.New("user.registered", registered{Email: email})
		if err != nil {
			t.Fatal(err)
		}
		e.Source = "/test"
		res, err := s.Append(ctx, "default", subject, store.Any, e.WithErasureKey(subject))
		if err != nil {
			t.Fatal(err)
		}
		return res.Events[0]
	}
	var typed, erased []string
	p := emails(&typed, &erased)
	add("alice", "alice@x")
	add("bob", "bob@x")
	catchUp(t, s, p) // the live model sees the plaintext
	late := add("alice", "alice2@x")
	if _, err := erasure.For(s).Forget(ctx, "default", "alice"); err != nil {
		t.Fatal(err)
	}
	typed, erased = nil, nil
	catchUp(t, s, p) // sees alice's late event erased, then the forget
	if len(typed) != 0 || !slices.Equal(erased, []string{late.ID}) {
		t.Fatalf("after forget: typed handler got %v, erased hook %v; want none, and %s", typed, erased, late.ID)
	}
	live := dump(t, s, "emails")
	if len(live) != 1 || !strings.Contains(live[0], "bob@x") {
		t.Fatalf("live read model after forget: %v, want bob's row only", live)
	}
	q, err := projection.Quarantine(s).Events(ctx, projection.QuarantineFilter{})
	if err != nil || len(q) != 0 {
		t.Fatalf("quarantine: %v, %v; want nothing", q, err)
	}
	if _, err := replay.Rebuild(ctx, s, emails(&typed, &erased), &replay.Options{FromScratch: true}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(live, dump(t, s, "emails")); diff != "" {
		t.Fatalf("rebuild differs from the live read model (-live +rebuild):\n%s", diff)
	}

	// An untyped projection receives the erased events as read.
	var got []envelope.Event
	untyped := projection.Projection{Name: "raw", Types: []string{"user.registered"},
		Apply: func(ctx context.Context, tx *projection.Tx, e envelope.Event) error {
			got = append(got, e)
			return nil
		}}
	catchUp(t, s, untyped)
	var erasedSeen int
	for _, e := range got {
		if envelope.Erased(e) {
			erasedSeen++
			if e.Data != nil || e.Extensions[store.ExtErasureKey] != "alice" {
				t.Errorf("untyped projection got %+v", e)
			}
		}
	}
	if len(got) != 3 || erasedSeen != 2 {
		t.Fatalf("untyped projection got %d events, %d erased; want 3 and 2", len(got), erasedSeen)
	}
}

// rawData is an untyped read model of every user.registered event's data.
func rawData() projection.Projection {
	return projection.Projection{Name: "rawdata", Types: []string{"user.registered"},
		Tables: []projection.Table{{Name: "rawdata", Schema: `CREATE TABLE {table} (position INTEGER PRIMARY KEY, data BLOB)`}},
		Apply: func(ctx context.Context, tx *projection.Tx, e envelope.Event) error {
			_, err := tx.ExecContext(ctx, `INSERT INTO `+tx.Table("rawdata")+` VALUES (?, ?)`, e.Position, []byte(e.Data))
			return err
		}}
}

// TestRebuildRefusesEncryptedWithoutKey: a rebuild on a store opened
// without the master key (or with a wrong one) stops with an error naming
// what to set instead of rebuilding read models from encrypted events
// without their data; the live read model is untouched.
func TestRebuildRefusesEncryptedWithoutKey(t *testing.T) {
	ctx := context.Background()
	key := make([]byte, erasure.MasterKeySize)
	path := filepath.Join(t.TempDir(), "eventlite.db")
	var typed, erased []string
	projections := []projection.Projection{emails(&typed, &erased), rawData()}
	func() {
		s := storetest.MustOpenPath(t, path, &store.Options{MasterKey: key})
		for _, subject := range []string{"alice", "bob"} {
			e, err := envelope.New("user.registered", registered{Email: subject + "@x"})
			if err != nil {
				t.Fatal(err)
			}
			e.Source = "/test"
			if _, err := s.Append(ctx, "default", subject, store.Any, e.WithErasureKey(subject)); err != nil {
				t.Fatal(err)
			}
		}
		for _, p := range projections {
			catchUp(t, s, p)
		}
	}()
	// With a wrong master key no rebuild starts: the store refuses to
	// open (a store uses one master key).
	var me *store.StoreMasterKeyError
	if s, err := store.Open(ctx, path, &store.Options{MasterKey: bytes.Repeat([]byte{9}, erasure.MasterKeySize)}); !errors.As(err, &me) {
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
			if !errors.Is(err, store.ErrNoMasterKey) || !errors.As(err, &ee) || ee.Subject != "alice" {
				t.Fatalf("Rebuild: %v; want a *store.EncryptedError on subject alice, matching store.ErrNoMasterKey", err)
			}
		}},
	} {
		for _, p := range projections {
			t.Run(c.name+"/"+p.Name, func(t *testing.T) {
				s := storetest.MustOpenPath(t, path, &c.opts)
				before := snapshot(t, s, p)
				_, err := replay.Rebuild(ctx, s, p, &replay.Options{FromScratch: true})
				c.check(t, err)
				if diff := cmp.Diff(before, snapshot(t, s, p)); diff != "" {
					t.Fatalf("live read model changed (-before +after):\n%s", diff)
				}
			})
		}
	}
}
