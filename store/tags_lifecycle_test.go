package store_test

import (
	"context"
	"database/sql"
	"errors"
	"net/url"
	"os"
	"slices"
	"strconv"
	"testing"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/backup"
	"github.com/eventlite/eventlite/store/drivertest"
	"github.com/eventlite/eventlite/store/erasure"
	"github.com/eventlite/eventlite/store/lifecycle"
	"github.com/eventlite/eventlite/store/storetest"
)

// tagStores opens a SQLite store and, when EVENTLITE_TEST_POSTGRES is
// set, a PostgreSQL one, each checked for its invariants at cleanup.
func tagStores(t *testing.T, opts *store.Options) map[string]*store.Store {
	t.Helper()
	out := map[string]*store.Store{"sqlite": storetest.MustOpen(t, opts)}
	if os.Getenv(storetest.PostgresEnv) != "" {
		base := storetest.PostgresBase(t)
		out["postgres"] = storetest.MustOpenPath(t, storetest.PostgresSchema(t, base), opts)
	} else {
		t.Log("PostgreSQL skipped: " + storetest.PostgresEnv + " is empty")
	}
	return out
}

func taggedEvent(t *testing.T, typ string, tags ...string) envelope.Event {
	t.Helper()
	e := drivertest.Event(t, typ, map[string]string{"k": "v"})
	e.Tags = tags
	return e
}

// TestForgetErasesTags: the tags of an event under a forgotten subject
// are erased with its data: the event reads without them, no query
// matches it, and the user name it claimed is free again.
func TestForgetErasesTags(t *testing.T) {
	for name, s := range tagStores(t, &store.Options{MasterKey: drivertest.MasterKey(t, 40)}) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			nameQ := store.Query{Items: []store.QueryItem{{Tags: []string{"username:alice"}}}}
			claim := func(stream, subject string) error {
				e := drivertest.Personal(t, subject, subject+"@example.org")
				e.Tags = []string{"username:alice", "user:" + subject}
				_, err := s.Append(ctx, "default", stream, store.NoStream.If(store.Condition{Query: nameQ}), e)
				return err
			}
			if err := claim("user-1", "subj-1"); err != nil {
				t.Fatal(err)
			}
			// Another event of the same subject, without tags, and one
			// of another subject with the tag user:subj-1 spelled alike
			// but its own: it keeps its tags.
			if _, err := s.Append(ctx, "default", "user-1", store.Any, drivertest.Personal(t, "subj-1", "x")); err != nil {
				t.Fatal(err)
			}
			other := taggedEvent(t, "Note", "user:subj-1")
			other.ID = "note-" + name
			if _, err := s.Append(ctx, "default", "notes", store.Any, other); err != nil {
				t.Fatal(err)
			}
			if err := claim("user-2", "subj-2"); !errors.Is(err, store.ErrConditionFailed) {
				t.Fatalf("second claim before the forget: %v", err)
			}
			if _, err := erasure.For(s).Forget(ctx, "default", "subj-1"); err != nil {
				t.Fatal(err)
			}
			for ev, err := range s.ReadStream(ctx, "default", "user-1", store.ReadStreamOptions{}) {
				if err != nil {
					t.Fatal(err)
				}
				if len(ev.Tags) > 0 || ev.Extensions[envelope.ExtTags] != nil {
					t.Errorf("erased event %d still has tags %q (%v)", ev.StreamVersion, ev.Tags, ev.Extensions)
				}
			}
			var n int
			for _, err := range s.ReadAll(ctx, store.ReadAllOptions{Tenant: "default", Query: nameQ}) {
				if err != nil {
					t.Fatal(err)
				}
				n++
			}
			if n != 0 {
				t.Errorf("%d events still match username:alice after the forget", n)
			}
			var kept []string
			for ev, err := range s.ReadAll(ctx, store.ReadAllOptions{Tenant: "default", Query: store.Query{Items: []store.QueryItem{{Tags: []string{"user:subj-1"}}}}}) {
				if err != nil {
					t.Fatal(err)
				}
				kept = append(kept, ev.ID)
			}
			if !slices.Equal(kept, []string{other.ID}) {
				t.Errorf("events tagged user:subj-1 after the forget: %v, want only the other subject's %s", kept, other.ID)
			}
			if err := claim("user-2", "subj-2"); err != nil {
				t.Errorf("claim after the forget: %v, want the name free", err)
			}
		})
	}
}

// TestDiagnoseInvalidStoredTags: an event stored before tags existed
// with an eventlitetags extension that does not decode reads with it as
// an extension, matches no query, and doctor reports it; one that
// decodes is indexed by the migration.
func TestMigrateTagsIndexesStoredExtension(t *testing.T) {
	ctx := context.Background()
	path := t.TempDir() + "/old.db"
	s, err := store.Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	good := taggedEvent(t, "Old", `a,b`, "c")
	bad := taggedEvent(t, "Old", "x")
	good.ID, bad.ID = "good", "bad"
	if _, err := s.Append(ctx, "default", "old", store.Any, good, bad); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// As an older eventlite stored them: no index, and the second
	// event's value is not a tag list.
	storetest.RawExec(t, path, `DROP TABLE event_tags`,
		`UPDATE events SET attrs = CAST(x'000000' || '{"eventlitetags":"bad\\"}' AS BLOB) WHERE event_id = '`+bad.ID+`'`,
		`PRAGMA user_version = 19`)
	s = storetest.MustOpenPath(t, path, nil)
	read := func(q store.Query) []string {
		var ids []string
		for ev, err := range s.ReadAll(ctx, store.ReadAllOptions{Tenant: "default", Query: q}) {
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, ev.ID)
		}
		return ids
	}
	if got := read(store.Query{Items: []store.QueryItem{{Tags: []string{`a,b`, "c"}}}}); !slices.Equal(got, []string{good.ID}) {
		t.Errorf("the valid stored tags after the migration: %v", got)
	}
	got, err := s.EventByID(ctx, "default", bad.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Tags != nil || got.Extensions[envelope.ExtTags] != `bad\` {
		t.Errorf("the invalid value reads as tags %q, extensions %v", got.Tags, got.Extensions)
	}
	findings, err := s.Diagnose(ctx, store.DiagnoseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, f := range findings {
		if f.Kind == "tags_invalid" {
			found = f.Count == 1
		}
		if f.Kind == "tags_unindexed" {
			t.Errorf("finding %+v", f)
		}
	}
	if !found {
		t.Errorf("doctor does not report the invalid stored tags: %+v", findings)
	}
}

// TestCheckInvariantsSeesTagIndex: a missing or stray index row breaks
// the invariants (negative control for the check every test's cleanup
// runs).
func TestCheckInvariantsSeesTagIndex(t *testing.T) {
	ctx := context.Background()
	path := t.TempDir() + "/tags.db"
	s, err := store.Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Append(ctx, "default", "s", store.Any, taggedEvent(t, "T", "a", "b")); err != nil {
		t.Fatal(err)
	}
	if err := s.CheckInvariants(ctx); err != nil {
		t.Fatal(err)
	}
	_ = s.Close()
	storetest.RawExec(t, path, `DELETE FROM event_tags WHERE tag = 'a'`, `INSERT INTO event_tags VALUES ('default', 'zzz', 1)`)
	s, err = store.Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	err = s.CheckInvariants(ctx)
	var ie *store.InvariantError
	if !errors.As(err, &ie) || len(ie.Problems) != 2 {
		t.Errorf("after removing one row and adding a stray one: %v, want 2 problems", err)
	}
}

// TestTagsScavengeAndCopy: a scavenge removes the index rows of the
// events it removes (the invariants check it at cleanup), and a copy to
// PostgreSQL moves the index, which the target's queries then use.
func TestTagsScavengeAndCopy(t *testing.T) {
	ctx := context.Background()
	path := t.TempDir() + "/src.db"
	s, err := store.Open(ctx, path, nil) // closed before the copy: no MustOpen
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var evs []envelope.Event
	for i := range 6 {
		e := taggedEvent(t, "Step", "course:c1", "n:"+strconv.Itoa(i))
		e.ID = "step-" + strconv.Itoa(i)
		evs = append(evs, e)
	}
	if _, err := s.Append(ctx, "default", "c1", store.NoStream, evs...); err != nil {
		t.Fatal(err)
	}
	if _, err := lifecycle.For(s).Truncate(ctx, "default", "c1", 4, store.Any); err != nil {
		t.Fatal(err)
	}
	storetest.PublishAll(t, s) // unpublished events hold a scavenge back
	res := drivertest.Scavenge(t, s, lifecycle.ScavengeOptions{})
	if res.Removed != 3 {
		t.Fatalf("scavenge removed %d events, want 3", res.Removed)
	}
	if err := s.CheckInvariants(ctx); err != nil {
		t.Fatal(err)
	}
	q := store.Query{Items: []store.QueryItem{{Tags: []string{"course:c1"}}}}
	ids := func(s *store.Store) []string {
		var out []string
		for ev, err := range s.ReadAll(ctx, store.ReadAllOptions{Tenant: "default", Query: q}) {
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, ev.ID)
		}
		return out
	}
	want := []string{"step-3", "step-4", "step-5"}
	if got := ids(s); !slices.Equal(got, want) {
		t.Errorf("after the scavenge: %v, want %v", got, want)
	}
	if os.Getenv(storetest.PostgresEnv) == "" {
		t.Skip("copy part skipped: " + storetest.PostgresEnv + " is empty")
	}
	if err := s.CheckInvariants(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	target := storetest.PostgresSchema(t, storetest.PostgresBase(t))
	if _, err := backup.Copy(ctx, path, target, nil); err != nil {
		t.Fatal(err)
	}
	dst := storetest.MustOpenPath(t, target, nil)
	if got := ids(dst); !slices.Equal(got, want) {
		t.Errorf("in the copy: %v, want %v", got, want)
	}
	if _, err := dst.Append(ctx, "default", "c1", store.Any.If(store.Condition{Query: q, After: 0}), taggedEvent(t, "Step", "course:c1")); !errors.Is(err, store.ErrConditionFailed) {
		t.Errorf("condition in the copy: %v", err)
	}
}

// TestMigrateTagsPostgres: PostgreSQL's migration 0005 indexes the
// events that carry a valid eventlitetags extension (escapes included)
// and skips one that does not decode.
func TestMigrateTagsPostgres(t *testing.T) {
	base := storetest.PostgresBase(t)
	addr := storetest.PostgresSchema(t, base)
	ctx := context.Background()
	s, err := store.Open(ctx, addr, nil)
	if err != nil {
		t.Fatal(err)
	}
	good := taggedEvent(t, "Old", `a,b`, `c\`, "d")
	bad := taggedEvent(t, "Old", "x")
	good.ID, bad.ID = "good", "bad"
	if _, err := s.Append(ctx, "default", "old", store.Any, good, bad); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(addr)
	if err != nil {
		t.Fatal(err)
	}
	schema := u.Query().Get("eventlite_schema")
	db, err := sql.Open("pgx", base)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range []string{
		`DROP TABLE ` + schema + `.event_tags`,
		`UPDATE ` + schema + `.events SET extensions = '{"eventlitetags":"bad,bad"}' WHERE event_id = 'bad'`,
		`DELETE FROM ` + schema + `.schema_migrations WHERE version >= 5`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	s = storetest.MustOpenPath(t, addr, nil) // migrates; invariants at cleanup
	var ids []string
	for ev, err := range s.ReadAll(ctx, store.ReadAllOptions{Tenant: "default", Query: store.Query{Items: []store.QueryItem{{Tags: []string{`a,b`, `c\`}}}}}) {
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, ev.ID)
	}
	if !slices.Equal(ids, []string{"good"}) {
		t.Errorf("after the migration: %v, want [good]", ids)
	}
	findings, err := s.Diagnose(ctx, store.DiagnoseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range findings {
		if f.Kind == "tags_invalid" && f.Count != 1 || f.Kind == "tags_unindexed" {
			t.Errorf("finding %+v", f)
		}
	}
}
