package main

import (
	"context"
	"encoding/json"
	"maps"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/eventlite/eventlite/internal/inside"
	"github.com/eventlite/eventlite/projection"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/storetest"
)

// copyTarget returns an address of the server in EVENTLITE_TEST_POSTGRES
// with a schema no other test uses, dropped when t ends; it skips t
// without a server.
func copyTarget(t *testing.T) string {
	t.Helper()
	return storetest.PostgresSchema(t, storetest.PostgresBase(t))
}

// readCatalog reads every tenant's catalog of the store at addr.
func readCatalog(t *testing.T, addr string) []projection.CatalogEntry {
	t.Helper()
	ctx := context.Background()
	s, err := store.Open(ctx, addr, &store.Options{ReadOnly: !isPostgres(addr)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var out []projection.CatalogEntry
	err = projection.ReadCatalog(ctx, s, "", func(e projection.CatalogEntry) error {
		out = append(out, e)
		return nil
	})
	if err != nil {
		t.Fatalf("read the catalog of %s: %v", s.Path(), err)
	}
	return out
}

func TestCopyDemoToPostgres(t *testing.T) {
	target := copyTarget(t)
	dir := t.TempDir()
	t.Chdir(dir)
	mustRun(t, "", "demo")
	db := filepath.Join(dir, demoDefaultDB)
	mustRun(t, "", "replay", "catalog", "--db", db)

	r := run(t, "", "copy", "--from", db, "--to", target, "--json")
	rebuilt := r.code == exitOK
	if !rebuilt && !(r.code == exitUsage && strings.Contains(r.stderr, "rebuild of its read models") && strings.Contains(r.stderr, "not supported")) {
		t.Fatalf("copy: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	var got copyJSON
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
		t.Fatalf("copy --json: %v\n%s", err, r.stdout)
	}
	if got.Events == 0 || got.Tables["events"] != got.Events || got.Tables["outbox"] == 0 || got.Tables["effects"] == 0 ||
		got.Tables["outbox_counters"] != 5 || got.Digest == "" {
		t.Errorf("copy --json: %+v", got)
	}
	if !strings.Contains(r.stderr, "copy: streams:") || !strings.Contains(r.stderr, "rebuilding the read models") {
		t.Errorf("no progress on stderr:\n%s", r.stderr)
	}

	// The catalog rebuilt on the target equals the source's.
	if rebuilt {
		if len(got.Rebuilt) != 1 || !strings.HasPrefix(got.Rebuilt[0], "catalog") {
			t.Errorf("rebuilt %v, want the catalog", got.Rebuilt)
		}
		want, have := readCatalog(t, db), readCatalog(t, target)
		if len(want) == 0 || len(want) != len(have) {
			t.Fatalf("catalog: %d streams in the source, %d in the target", len(want), len(have))
		}
		for i := range want {
			a, b := want[i], have[i]
			if a.Tenant != b.Tenant || a.Stream != b.Stream || a.Version != b.Version || !a.FirstTime.Equal(b.FirstTime) ||
				!a.LastTime.Equal(b.LastTime) || !maps.Equal(a.EventsByType, b.EventsByType) {
				t.Errorf("catalog entry %d: %+v in the source, %+v in the target", i, a, b)
			}
		}
	} else {
		t.Logf("the catalog is not compared: the target cannot rebuild it yet:\n%s", r.stderr)
	}

	// The target's next append follows the source's sequence.
	s, err := store.Open(context.Background(), target, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	res, err := s.Append(context.Background(), "default", "after-copy", store.NoStream, mustEvent(t))
	if err != nil {
		t.Fatal(err)
	}
	if res.Events[0].Position != got.Sequence+1 {
		t.Errorf("the next append took position %d, want %d", res.Events[0].Position, got.Sequence+1)
	}

	// A schema with store rows is refused: exit 4.
	if r := run(t, "", "copy", "--from", db, "--to", target); r.code != exitInvalid || !strings.Contains(r.stderr, "not empty") {
		t.Errorf("copy into a filled schema: exit %d\n%s", r.code, r.stderr)
	}
}

func TestCopyRefusesLiveLease(t *testing.T) {
	target := copyTarget(t)
	db := filepath.Join(t.TempDir(), "src.db")
	mustRun(t, "", "append", "order-1", "--type", "t", "--db", db)
	s, err := store.Open(context.Background(), db, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.Inner(inside.Key{}, s).AcquireLease(context.Background(), "relay", "relay-1", time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	r := run(t, "", "copy", "--from", db, "--to", target)
	if r.code != exitBusy || !strings.Contains(r.stderr, "relay (relay-1)") || !strings.Contains(r.stderr, "--force") {
		t.Fatalf("copy while a lease is held: exit %d\n%s", r.code, r.stderr)
	}
	r = run(t, "", "copy", "--from", db, "--to", target, "--force")
	if r.code != exitOK && !(r.code == exitUsage && strings.Contains(r.stderr, "rebuild of its read models")) {
		t.Fatalf("copy --force: exit %d\n%s", r.code, r.stderr)
	}
	if !strings.Contains(r.stderr, "arrive released") || !strings.Contains(r.stdout, "1 events") {
		t.Errorf("copy --force:\nstdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	}
}

func TestCopyUsage(t *testing.T) {
	db := filepath.Join(t.TempDir(), "src.db")
	for _, args := range [][]string{
		{"copy"},
		{"copy", "--from", db},
		{"copy", "--to", "postgres://h/db"},
		{"copy", "--from", "postgres://h/a", "--to", "postgres://h/db"},
		{"copy", "--from", db, "--to", db},
		{"copy", "--from", db, "--to", "postgres://h/db", "extra"},
		{"copy", "--from", db, "--to", "postgres://h/db", "--nope"},
	} {
		if r := run(t, "", args...); r.code != exitUsage {
			t.Errorf("eventlite %q: exit %d, want %d\n%s", args, r.code, exitUsage, r.stderr)
		}
	}
	if r := run(t, "", "copy", "--from", db, "--to", "postgres://h/db"); r.code != exitNotFound {
		t.Errorf("copy from a missing file: exit %d, want %d\n%s", r.code, exitNotFound, r.stderr)
	}
}

// TestCopyDoesNotUnforget copies, from the CLI, a backup taken before a
// forget, naming the live store with --forgets-from: exit 4 naming the
// subject, then --reapply-forgets copies with the subject erased.
func TestCopyDoesNotUnforget(t *testing.T) {
	target := copyTarget(t)
	db := newDB(t)
	key, _, _ := masterKeyFiles(t)
	mustRun(t, "", "append", "u-1", "--type", "user.registered", "--data", `{"email":"alice.c36@example.org"}`, "--erasure-key", "alice", "--master-key-file", key, "--db", db)
	bak := filepath.Join(t.TempDir(), "before.db")
	mustRun(t, "", "backup", bak, "--db", db)
	mustRun(t, "", "forget", "alice", "--db", db)

	r := run(t, "", "copy", "--from", bak, "--to", target, "--forgets-from", db, "--master-key-file", key)
	if r.code != exitInvalid || !strings.Contains(r.stderr, `"alice"`) || !strings.Contains(r.stderr, "--reapply-forgets") {
		t.Fatalf("copy of a backup taken before the forget: exit %d, stderr %s; want 4 naming alice and --reapply-forgets", r.code, r.stderr)
	}
	out := mustRun(t, "", "copy", "--from", bak, "--to", target, "--forgets-from", db, "--reapply-forgets", "--master-key-file", key, "--json").stdout
	if !strings.Contains(out, `"reforgotten":[{"tenant":"default","subject":"alice"}]`) {
		t.Errorf("copy --reapply-forgets --json: %s", out)
	}
	out = mustRun(t, "", "read", "u-1", "--master-key-file", key, "--db", target).stdout
	if !strings.Contains(out, `"dataerased":true`) || strings.Contains(out, "alice.c36") {
		t.Fatalf("read the copy: %s", out)
	}
}
