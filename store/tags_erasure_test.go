package store_test

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/internal/inside"
	"github.com/eventlite/eventlite/internal/projrow"
	"github.com/eventlite/eventlite/projection"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/backup"
	"github.com/eventlite/eventlite/store/drivertest"
	"github.com/eventlite/eventlite/store/erasure"
	"github.com/eventlite/eventlite/store/storetest"
)

// TestForgetErasesTagsInCopies: the copies of a forgotten subject's
// events kept in quarantine and in a consumer's deferral buffer lose
// their tags with their data: the stored copies no longer hold the tag
// text, and on SQLite no byte of it is left in the file or its WAL. Before
// the fix, Forget removed the copies' data and left their
// eventlitetags extension.
func TestForgetErasesTagsInCopies(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "copies.db")
	opts := &store.Options{MasterKey: drivertest.MasterKey(t, 4001)}
	stores := map[string]*store.Store{"sqlite": storetest.MustOpenPath(t, path, opts)}
	for name, s := range tagStores(t, opts) {
		if name != "sqlite" {
			stores[name] = s
		}
	}
	for name, s := range stores {
		t.Run(name, func(t *testing.T) {
			tags := map[string]string{
				"quarantine": "username:alice-quarantine.40c7",
				"deferral":   "username:alice-deferral.40c7",
			}
			q := drivertest.Personal(t, "alice", "a@example.org")
			q.Tags = []string{tags["quarantine"]}
			d := drivertest.Personal(t, "alice", "a@example.org")
			d.Tags = []string{tags["deferral"]}
			res, err := s.Append(ctx, "default", "user-alice", store.NoStream, q, d)
			if err != nil {
				t.Fatal(err)
			}
			evJSON := func(e envelope.Event) []byte {
				b, err := json.Marshal(e)
				if err != nil {
					t.Fatal(err)
				}
				return b
			}
			err = s.Update(ctx, func(tx *store.Tx) error {
				b := store.Bookkeeping(inside.Key{}, tx)
				if err := b.Quarantine(ctx, projrow.Quarantined{Consumer: "users", Reason: string(projection.ReasonHandlerError), Tenant: "default", Subject: "user-alice", Version: 1,
					Position: res.FirstPosition(), EventID: res.Events[0].ID, Event: evJSON(res.Events[0]), Error: "handler failed", Attempts: 1}); err != nil {
					return err
				}
				_, _, err := b.Defer(ctx, inside.Deferred{Tenant: "default", Consumer: "mailer", Subject: "user-alice", Version: 9,
					EventID: res.Events[1].ID, Event: evJSON(res.Events[1]), Reason: "gap"})
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			copies := func() map[string][]byte {
				out := map[string][]byte{}
				err := s.Update(ctx, func(tx *store.Tx) error {
					for place, table := range map[string]string{"quarantine": "quarantine", "deferral": "deferred"} {
						var b []byte
						if err := tx.QueryRowContext(ctx, `SELECT event FROM `+table+` WHERE tenant = $1`, "default").Scan(&b); err != nil {
							return err
						}
						out[place] = b
					}
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
				return out
			}
			for place, b := range copies() {
				if !bytes.Contains(b, []byte(tags[place])) {
					t.Fatalf("the %s copy does not hold its tag before the forget: %s", place, b)
				}
			}
			if fr, err := erasure.For(s).Forget(ctx, "default", "alice"); err != nil || fr.Copies != 2 {
				t.Fatalf("forget: %+v, %v; want 2 copies erased", fr, err)
			}
			for place, b := range copies() {
				if bytes.Contains(b, []byte(tags[place])) || bytes.Contains(b, []byte(envelope.ExtTags)) {
					t.Errorf("the %s copy keeps its tags after the forget: %s", place, b)
				}
				var m map[string]any
				if err := json.Unmarshal(b, &m); err != nil || m["dataerased"] != true {
					t.Errorf("the %s copy after the forget: %s (%v), want JSON marked dataerased", place, b, err)
				}
			}
			for _, tag := range tags {
				if n := tagMatches(t, s, "default", tag); n != 0 {
					t.Errorf("%d events match %q after the forget", n, tag)
				}
			}
			if name != "sqlite" {
				return
			}
			if ok, err := store.CheckpointTruncate(ctx, s); err != nil || !ok {
				t.Fatalf("checkpoint: %v %v", ok, err)
			}
			for place, tag := range tags {
				if in := holds(t, []byte(tag), path); len(in) > 0 {
					t.Errorf("after the forget the %s copy's tag is still in %v", place, in)
				}
			}
		})
	}
}

// TestRestoreReapplyErasesTags restores, with ReapplyForgets, a backup
// taken before a forget of a subject whose events carry tags: the
// restored events read without them, a query by the tag matches nothing
// (the index rows are gone too) and the tag text is nowhere in the file.
// Before the fix, the re-forget removed the data and left the tags in
// the events' extensions and in the index.
func TestRestoreReapplyErasesTags(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "live.db")
	opts := &store.Options{MasterKey: drivertest.MasterKey(t, 4002)}
	s := storetest.MustOpenPath(t, path, opts)
	tag := "username:alice-restored.40r3"
	e := drivertest.Personal(t, "alice", "a@example.org")
	e.Tags = []string{tag, "user:alice"}
	if _, err := s.Append(ctx, "default", "user-alice", store.NoStream, e); err != nil {
		t.Fatal(err)
	}
	b := drivertest.Personal(t, "bob", "b@example.org")
	b.Tags = []string{"user:bob"}
	if _, err := s.Append(ctx, "default", "user-bob", store.NoStream, b); err != nil {
		t.Fatal(err)
	}
	bak := filepath.Join(dir, "backup.db")
	if _, err := backup.Create(ctx, path, bak, nil); err != nil {
		t.Fatal(err)
	}
	if in := holds(t, []byte(tag), bak); len(in) == 0 {
		t.Fatal("the tag is not found in the backup: the byte search does not work there")
	}
	if _, err := erasure.For(s).Forget(ctx, "default", "alice"); err != nil {
		t.Fatal(err)
	}
	if _, err := backup.Restore(ctx, bak, path, &backup.RestoreOptions{Force: true, ReapplyForgets: true}); err != nil {
		t.Fatal(err)
	}
	for _, st := range []*store.Store{storetest.MustOpenPath(t, path, opts), s} {
		evs := drivertest.ReadStream(t, st, "default", "user-alice")
		if len(evs) != 1 || !envelope.Erased(evs[0]) || len(evs[0].Tags) > 0 || evs[0].Extensions[envelope.ExtTags] != nil {
			t.Fatalf("after the restore alice's event reads %+v, want erased without tags", evs)
		}
		for _, tg := range []string{tag, "user:alice"} {
			if n := tagMatches(t, st, "default", tg); n != 0 {
				t.Errorf("%d events match %q after the restore", n, tg)
			}
		}
		if n := tagMatches(t, st, "default", "user:bob"); n != 1 {
			t.Errorf("%d events match user:bob after the restore, want bob's 1", n)
		}
	}
	if ok, err := store.CheckpointTruncate(ctx, s); err != nil || !ok {
		t.Fatalf("checkpoint: %v %v", ok, err)
	}
	if in := holds(t, []byte(tag), path); len(in) > 0 {
		t.Errorf("after the restore the forgotten subject's tag is still in %v", in)
	}
}
