package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	_ "modernc.org/sqlite"

	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/storetest"
)

// readCommands only read: they never create, migrate or convert a file.
var readCommands = [][]string{
	{"read", "s"},
	{"tail"},
	{"streams"},
	{"projections"},
	{"dlq", "list"},
	{"quarantine", "list"},
	{"effects", "list"},
	{"doctor"},
}

// olderSchema writes an eventlite database one schema version behind this
// binary, as the previous eventlite left it: WAL, the migrations before
// the last one applied, with an event in it.
func olderSchema(t *testing.T, path string) int {
	t.Helper()
	files, err := filepath.Glob("../../store/internal/sqlitedriver/migrations/*.sql")
	if err != nil || len(files) != store.SchemaVersion() {
		t.Fatalf("migrations: %v %v", files, err)
	}
	slices.Sort(files)
	stmts := []string{"PRAGMA journal_mode=WAL"}
	for _, f := range files[:len(files)-1] {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		stmts = append(stmts, string(b))
	}
	old := len(files) - 1
	// Schema 14 dropped streams.version and updated_at.
	stream := `INSERT INTO streams (tenant, stream_id, created_at) VALUES ('default', 's', 1)`
	if old < 14 {
		stream = `INSERT INTO streams (tenant, stream_id, version, created_at, updated_at) VALUES ('default', 's', 1, 1, 1)`
	}
	stmts = append(stmts, fmt.Sprintf("PRAGMA user_version=%d", old), stream,
		`INSERT INTO events (tenant, stream_id, version, event_id, type, source, time, content_type, data, recorded_at)
		 VALUES ('default', 's', 1, 'e-1', 't', '/x', 1, 'application/json', '{}', 1)`,
		`INSERT INTO outbox (position) VALUES (1)`)
	storetest.RawExec(t, path, stmts...)
	return old
}

// Every command refuses a file that is not an eventlite database with
// exit 4 and leaves it byte for byte as it was, with nothing beside it.
func TestEveryCommandRefusesForeignFile(t *testing.T) {
	t.Parallel()
	commands := append(slices.Clone(readCommands),
		[]string{"append", "s", "--type", "t"},
		[]string{"tail", "--follow"},
		[]string{"dlq", "retry", "--all"},
		[]string{"quarantine", "skip", "p", "e"},
		[]string{"doctor", "--deep"},
		[]string{"catalog"},
		[]string{"catalog", "--follow"},
		[]string{"replay", "catalog"},
		[]string{"replay", "catalog", "--dry-run"},
		[]string{"relay", "--to", "stdout", "--once"},
		[]string{"relay", "--to", "stdout"},
		[]string{"migrate"},
		[]string{"backup"},
		[]string{"restore"},
	)
	for _, args := range commands {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			t.Parallel()
			db := filepath.Join(t.TempDir(), "app.db")
			storetest.RawExec(t, db, "PRAGMA journal_mode=WAL", "CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT)",
				"INSERT INTO users (name) VALUES ('ada')")
			switch args[0] {
			case "backup": // to another directory, so that only db's is compared
				args = append(args, filepath.Join(t.TempDir(), "copy.db"))
			case "restore": // a good backup over the foreign file
				src := filepath.Join(t.TempDir(), "good.db")
				if r := run(t, "", "append", "s", "--type", "t", "--data", "{}", "--db", src); r.code != 0 {
					t.Fatalf("append: %+v", r)
				}
				args = append(args, src, "--force")
			}
			before := storetest.DirDigest(t, filepath.Dir(db))
			// Bounded: a follow that accepted the file would run on.
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			r := runWith(t, ctx, nil, "", append(args, "--db", db)...)
			if r.code != exitInvalid || !strings.Contains(r.stderr, "not an eventlite database") {
				t.Errorf("exit %d (want %d), stderr %q", r.code, exitInvalid, r.stderr)
			}
			if diff := cmp.Diff(before, storetest.DirDigest(t, filepath.Dir(db))); diff != "" {
				t.Errorf("the refused file changed (-before +after):\n%s", diff)
			}
		})
	}
}

// Commands that only read refuse a database of an older schema, and an
// empty file, with exit 4 saying that eventlite migrate (or a command that
// writes) upgrades it, and change nothing; migrate then upgrades it.
func TestReadCommandsDoNotMigrate(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{"older schema", "empty file", "file without tables"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			db := filepath.Join(t.TempDir(), "events.db")
			from := 0
			switch kind {
			case "older schema":
				from = olderSchema(t, db)
			case "empty file":
				if err := os.WriteFile(db, nil, 0o644); err != nil {
					t.Fatal(err)
				}
			default:
				storetest.RawExec(t, db, "CREATE TABLE x (y)", "DROP TABLE x")
			}
			before := storetest.DirDigest(t, filepath.Dir(db))
			for _, args := range readCommands {
				r := run(t, "", append(args, "--db", db)...)
				if r.code != exitInvalid || !strings.Contains(r.stderr, "eventlite migrate") || !strings.Contains(r.stderr, "command that writes") {
					t.Errorf("%q: exit %d (want %d), stderr %q", args, r.code, exitInvalid, r.stderr)
				}
			}
			if diff := cmp.Diff(before, storetest.DirDigest(t, filepath.Dir(db))); diff != "" {
				t.Fatalf("read commands changed the file (-before +after):\n%s", diff)
			}
			r := mustRun(t, "", "migrate", "--json", "--db", db)
			var out migrateOutput
			if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
				t.Fatalf("migrate --json: %v: %q", err, r.stdout)
			}
			abs, _ := filepath.Abs(db)
			if want := (migrateOutput{Path: abs, From: from, To: store.SchemaVersion()}); out != want {
				t.Errorf("migrate --json: %+v, want %+v", out, want)
			}
			if r := mustRun(t, "", "migrate", "--db", db); r.stdout != fmt.Sprintf("%s: schema %d, up to date\n", abs, store.SchemaVersion()) {
				t.Errorf("migrate again: %q", r.stdout)
			}
			for _, args := range readCommands {
				if args[0] == "read" && kind != "older schema" {
					continue // no stream s
				}
				mustRun(t, "", append(args, "--db", db)...)
			}
			checkInvariants(t, db)
		})
	}
}

// A command that writes upgrades an older schema by itself.
func TestWriteCommandMigrates(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "events.db")
	olderSchema(t, db)
	mustRun(t, "", "append", "s", "--type", "t", "--db", db)
	r := mustRun(t, "", "read", "s", "--db", db)
	if len(lines(r.stdout)) != 2 {
		t.Errorf("read after the upgrade:\n%s", r.stdout)
	}
	checkInvariants(t, db)
}

// On a missing file every command that only reads exits 5, says how a
// database is made, and creates nothing; migrate creates it.
func TestReadCommandsOnMissingFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := filepath.Join(dir, "events.db")
	for _, args := range readCommands {
		r := run(t, "", append(args, "--db", db)...)
		if r.code != exitNotFound || !strings.Contains(r.stderr, "eventlite migrate") {
			t.Errorf("%q: exit %d (want %d), stderr %q", args, r.code, exitNotFound, r.stderr)
		}
		if es, _ := os.ReadDir(dir); len(es) != 0 {
			t.Fatalf("%q left %v", args, es)
		}
	}
	abs, _ := filepath.Abs(db)
	if r := mustRun(t, "", "migrate", "--db", db); r.stdout != fmt.Sprintf("%s: schema 0 -> %d\n", abs, store.SchemaVersion()) {
		t.Errorf("migrate: %q", r.stdout)
	}
	mustRun(t, "", "streams", "--db", db)
}

// On an up-to-date database the read commands leave the file and its
// directory exactly as they found them (no -wal or -shm left).
func TestReadCommandsLeaveNoTrace(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	appendN(t, db, "s", 3)
	before := storetest.DirDigest(t, filepath.Dir(db))
	for _, args := range readCommands {
		mustRun(t, "", append(args, "--db", db)...)
	}
	if diff := cmp.Diff(before, storetest.DirDigest(t, filepath.Dir(db))); diff != "" {
		t.Errorf("read commands changed the database (-before +after):\n%s", diff)
	}
}

func TestMigrateHelp(t *testing.T) {
	t.Parallel()
	r := mustRun(t, "", "help", "migrate")
	for _, want := range []string{"Usage: eventlite migrate", "never create, migrate or convert", "exit 4"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("help migrate lacks %q:\n%s", want, r.stdout)
		}
	}
	if r := mustRun(t, "", "help"); !strings.Contains(r.stdout, "\n  migrate ") {
		t.Errorf("help lacks migrate:\n%s", r.stdout)
	}
}
