package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// masterKeyFiles writes two master key files (hex) and a malformed one.
func masterKeyFiles(t *testing.T) (key, other, bad string) {
	t.Helper()
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	return write("master.key", strings.Repeat("3f", 32)+"\n"), write("other.key", strings.Repeat("a1", 32)), write("bad.key", "secret\n")
}

func TestForgetCommand(t *testing.T) {
	db := newDB(t)
	key, other, bad := masterKeyFiles(t)
	data := `{"email":"alice.77@example.org"}`

	// Without a master key an append carrying erasurekey is refused.
	r := run(t, "", "append", "u-1", "--type", "user.registered", "--data", data, "--erasure-key", "alice", "--db", db)
	if r.code != exitInvalid || !strings.Contains(r.stderr, "--master-key-file") {
		t.Fatalf("append without a master key: exit %d, stderr %s; want 4 naming --master-key-file", r.code, r.stderr)
	}
	if r := run(t, "", "read", "u-1", "--db", db); r.code != exitNotFound {
		t.Fatalf("after the refused append, read exits %d, want 5 (nothing stored)", r.code)
	}
	r = run(t, `{"specversion":"1.0","id":"x1","source":"s","type":"user.registered","erasurekey":"alice","data":{"email":"x"}}`, "append", "u-1", "--db", db)
	if r.code != exitInvalid {
		t.Fatalf("stdin append with the erasurekey attribute and no master key: exit %d, want 4", r.code)
	}
	if r := run(t, "", "read", "u-1", "--master-key-file", bad, "--db", db); r.code != exitInvalid || !strings.Contains(r.stderr, "64 hex digits") {
		t.Fatalf("a malformed key file: exit %d, stderr %s; want 4 saying the format", r.code, r.stderr)
	}

	mustRun(t, "", "append", "u-1", "--type", "user.registered", "--data", data, "--erasure-key", "alice", "--master-key-file", key, "--db", db)
	mustRun(t, "", "append", "u-1", "--type", "user.registered", "--data", data, "--erasure-key", "alice", "--tenant", "t2", "--master-key-file", key, "--db", db)
	env := map[string]string{"EVENTLITE_MASTER_KEY_FILE": key}
	if r := runWith(t, t.Context(), env, "", "read", "u-1", "--db", db); r.code != exitOK || !strings.Contains(r.stdout, "alice.77@example.org") {
		t.Fatalf("read with $EVENTLITE_MASTER_KEY_FILE: exit %d, %s %s", r.code, r.stdout, r.stderr)
	}
	if r := run(t, "", "read", "u-1", "--master-key-file", other, "--db", db); r.code != exitInvalid || !strings.Contains(r.stderr, "wrong master key") {
		t.Fatalf("read with another master key: exit %d, stderr %s; want 4, wrong master key", r.code, r.stderr)
	}

	// Without the key, read and tail show the events without data.
	for _, args := range [][]string{{"read", "u-1"}, {"tail"}} {
		out := mustRun(t, "", append(args, "--db", db)...).stdout
		if !strings.Contains(out, `"dataencrypted":true`) || strings.Contains(out, `"data"`) || strings.Contains(out, "alice.77") {
			t.Errorf("%v without a master key: %s", args, out)
		}
	}
	// Commands that publish or derive data refuse to start.
	for _, args := range [][]string{
		{"relay", "--to", "stdout", "--once"},
		{"serve", "--addr", "127.0.0.1:0"},
		{"replay", "catalog"},
		{"catalog"},
	} {
		r := run(t, "", append(args, "--db", db)...)
		if r.code != exitUsage || !strings.Contains(r.stderr, "--master-key-file") {
			t.Errorf("%v without a master key: exit %d, stderr %s; want 2 naming --master-key-file", args, r.code, r.stderr)
		}
	}
	// A wrong master key stops the relay (exit 4), nothing published; the
	// deadline only ends a relay that would retry forever.
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	if r := runWith(t, ctx, nil, "", "relay", "--to", "stdout", "--once", "--master-key-file", other, "--db", db); r.code != exitInvalid ||
		!strings.Contains(r.stderr, "wrong master key") || r.stdout != "" {
		t.Errorf("relay with another master key: exit %d, stdout %q, stderr %s; want 4, wrong master key, nothing published", r.code, r.stdout, r.stderr)
	}
	if r := run(t, "", "relay", "--to", "stdout", "--once", "--master-key-file", key, "--db", db); r.code != exitOK || !strings.Contains(r.stdout, "alice.77") {
		t.Errorf("relay with the key: exit %d, %s %s; want the plaintext published", r.code, r.stdout, r.stderr)
	}

	// forget needs no key; it touches one tenant.
	out := mustRun(t, "", "forget", "alice", "--json", "--db", db).stdout
	if !strings.Contains(out, `"streams":["u-1"]`) || !strings.Contains(out, `"already":false`) {
		t.Fatalf("forget --json: %s", out)
	}
	out = mustRun(t, "", "read", "u-1", "--master-key-file", key, "--db", db).stdout
	if !strings.Contains(out, `"dataerased":true`) || strings.Contains(out, "alice.77") || !strings.Contains(out, `"erasurekey":"alice"`) {
		t.Fatalf("read after forget: %s", out)
	}
	if out := mustRun(t, "", "read", "eventlite-forgotten", "--db", db).stdout; !strings.Contains(out, `"type":"eventlite.subject.forgotten"`) || !strings.Contains(out, `{"erasurekey":"alice"}`) {
		t.Fatalf("the forgotten stream: %s", out)
	}
	if out := mustRun(t, "", "read", "u-1", "--tenant", "t2", "--master-key-file", key, "--db", db).stdout; !strings.Contains(out, "alice.77") {
		t.Fatalf("tenant t2 after forgetting in default: %s", out)
	}
	if out := mustRun(t, "", "forget", "alice", "--db", db).stdout; !strings.Contains(out, "already forgotten") {
		t.Errorf("forget again: %s", out)
	}
	if r := run(t, "", "forget", "bob", "--db", db, "--json"); r.code != 0 || !strings.Contains(r.stdout, `"tombstone":true`) {
		t.Errorf("forget a subject no event carried: exit %d, %s; want 0 and a tombstone", r.code, r.stdout)
	}
	if r := run(t, "", "forget", "--db", db); r.code != exitUsage {
		t.Errorf("forget without a subject: exit %d, want 2", r.code)
	}
}

// TestRestoreDoesNotUnforget restores, from the CLI, a backup taken
// before a forget: exit 4 naming the subject and --reapply-forgets, the
// database unchanged; with --reapply-forgets the subject reads as erased
// afterwards and the output says so.
func TestRestoreDoesNotUnforget(t *testing.T) {
	db := newDB(t)
	key, _, _ := masterKeyFiles(t)
	data := `{"email":"alice.36@example.org"}`
	mustRun(t, "", "append", "u-1", "--type", "user.registered", "--data", data, "--erasure-key", "alice", "--master-key-file", key, "--db", db)
	bak := filepath.Join(t.TempDir(), "before.db")
	mustRun(t, "", "backup", bak, "--db", db)
	mustRun(t, "", "forget", "alice", "--db", db)
	before := readBytes(t, db)

	r := run(t, "", "restore", bak, "--db", db, "--force")
	if r.code != exitInvalid || !strings.Contains(r.stderr, `"alice"`) || !strings.Contains(r.stderr, "--reapply-forgets") {
		t.Fatalf("restore of a backup taken before the forget: exit %d, stderr %s; want 4 naming alice and --reapply-forgets", r.code, r.stderr)
	}
	if readBytes(t, db) != before {
		t.Fatal("the refused restore changed the database")
	}
	out := mustRun(t, "", "restore", bak, "--db", db, "--force", "--reapply-forgets", "--json").stdout
	if !strings.Contains(out, `"reforgotten":[{"tenant":"default","subject":"alice"}]`) {
		t.Errorf("restore --reapply-forgets --json: %s", out)
	}
	out = mustRun(t, "", "read", "u-1", "--master-key-file", key, "--db", db).stdout
	if !strings.Contains(out, `"dataerased":true`) || strings.Contains(out, "alice.36") {
		t.Fatalf("read after the restore: %s", out)
	}
	if out := mustRun(t, "", "help", "restore").stdout; !strings.Contains(out, "--reapply-forgets") {
		t.Errorf("help restore does not name --reapply-forgets: %s", out)
	}
}
