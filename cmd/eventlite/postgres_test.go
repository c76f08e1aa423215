package main

import (
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx", to drop the test's schema

	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/storetest"
)

// postgresDB returns the test server's address with eventlite_schema set
// to a schema no other test uses (not created yet), and the schema's
// name; the schema is dropped when t ends.
func postgresDB(t *testing.T) (addr, schema string) {
	t.Helper()
	base := storetest.PostgresBase(t)
	addr = storetest.PostgresSchema(t, base)
	u, err := url.Parse(addr)
	if err != nil {
		t.Fatal(err)
	}
	return addr, u.Query().Get("eventlite_schema")
}

// schemaExists asks the test server whether schema exists.
func schemaExists(t *testing.T, schema string) bool {
	t.Helper()
	db, err := sql.Open("pgx", storetest.PostgresBase(t))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM pg_namespace WHERE nspname = $1`, schema).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n == 1
}

// redacted is addr as eventlite shows it: its password, if any, replaced
// by xxxxx.
func redacted(t *testing.T, addr string) string {
	t.Helper()
	u, err := url.Parse(addr)
	if err != nil {
		t.Fatal(err)
	}
	if _, has := u.User.Password(); has {
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
	}
	return u.String()
}

// password is the password of addr, "" when it has none.
func password(t *testing.T, addr string) string {
	t.Helper()
	u, err := url.Parse(addr)
	if err != nil {
		t.Fatal(err)
	}
	p, _ := u.User.Password()
	return p
}

// TestPostgresAppendAndRead: with --db a PostgreSQL address, append,
// read, streams and tail keep the formats they have on a file.
func TestPostgresAppendAndRead(t *testing.T) {
	t.Parallel()
	db, _ := postgresDB(t)
	r := mustRun(t, events(2), "--db", db, "append", "order-1", "--json")
	var got appendOutput
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
		t.Fatalf("append --json: %v: %q", err, r.stdout)
	}
	if diff := cmp.Diff(appendOutput{Tenant: "default", Stream: "order-1", Version: 2, FirstPosition: 1, LastPosition: 2}, got); diff != "" {
		t.Errorf("append --json (-want +got):\n%s", diff)
	}
	checkInvariants(t, db)
	r = mustRun(t, "", "--db", db, "append", "order-2", "--type", "order.placed", "--data", `{"total":30}`, "--expected", "no-stream")
	if want := "appended 1 event to order-2: version 1, position 3\n"; r.stdout != want {
		t.Errorf("append printed %q, want %q", r.stdout, want)
	}

	evs := decodeLines(t, mustRun(t, "", "--db", db, "read", "order-1").stdout)
	if diff := cmp.Diff([]int64{1, 2}, versions(evs)); diff != "" {
		t.Errorf("read order-1 versions (-want +got):\n%s", diff)
	}
	evs = decodeLines(t, mustRun(t, "", "--db", db, "read", "order-1", "--backward", "--limit", "1").stdout)
	if diff := cmp.Diff([]int64{2}, versions(evs)); diff != "" {
		t.Errorf("read --backward --limit 1 versions (-want +got):\n%s", diff)
	}
	if r := run(t, "", "--db", db, "read", "nope"); r.code != exitNotFound {
		t.Errorf("read of a missing stream: exit %d, stderr %q; want %d", r.code, r.stderr, exitNotFound)
	}

	var streams []streamOutput
	for _, line := range lines(mustRun(t, "", "--db", db, "streams", "--json").stdout) {
		var s streamOutput
		if err := json.Unmarshal([]byte(line), &s); err != nil {
			t.Fatalf("streams --json line %q: %v", line, err)
		}
		s.Updated = ""
		streams = append(streams, s)
	}
	want := []streamOutput{{Tenant: "default", Stream: "order-1", Version: 2}, {Tenant: "default", Stream: "order-2", Version: 1}}
	if diff := cmp.Diff(want, streams); diff != "" {
		t.Errorf("streams --json (-want +got):\n%s", diff)
	}

	evs = decodeLines(t, mustRun(t, "", "--db", db, "tail").stdout)
	var positions []int64
	for _, e := range evs {
		positions = append(positions, e.Position)
	}
	if diff := cmp.Diff([]int64{1, 2, 3}, positions); diff != "" {
		t.Errorf("tail positions (-want +got):\n%s", diff)
	}
	evs = decodeLines(t, mustRun(t, "", "--db", db, "tail", "--from", "3").stdout)
	if len(evs) != 1 || evs[0].Stream != "order-2" {
		t.Errorf("tail --from 3: %+v, want order-2's event", evs)
	}
}

// TestPostgresEnvironment: $EVENTLITE_DB holding a PostgreSQL address
// chooses it as --db does, and nothing treats the address as a file's
// path: a command that only reads refuses a schema that does not exist
// (exit 4, run migrate) without creating it or any file.
func TestPostgresEnvironment(t *testing.T) {
	t.Parallel()
	db, schema := postgresDB(t)
	env := map[string]string{"EVENTLITE_DB": db}
	r := runWith(t, t.Context(), env, "", "streams")
	if r.code != exitInvalid || !strings.Contains(r.stderr, "eventlite migrate") {
		t.Errorf("streams on a missing schema: exit %d, stderr %q; want %d saying to run eventlite migrate", r.code, r.stderr, exitInvalid)
	}
	if schemaExists(t, schema) {
		t.Errorf("a command that only reads created the schema %s", schema)
	}
	if _, err := os.Stat(db); !os.IsNotExist(err) {
		t.Errorf("a file named like the address exists: %v", err)
	}
	if r := runWith(t, t.Context(), env, "", "append", "s", "--type", "t"); r.code != exitOK {
		t.Fatalf("append: exit %d, stderr %q", r.code, r.stderr)
	}
	checkInvariants(t, db)
	r = runWith(t, t.Context(), env, "", "read", "s")
	if evs := decodeLines(t, r.stdout); r.code != exitOK || len(evs) != 1 {
		t.Errorf("read through $EVENTLITE_DB: exit %d, %d events, stderr %q", r.code, len(evs), r.stderr)
	}
}

// TestPostgresMigrate: migrate creates the schema and prints the address
// without its password; a second run is up to date.
func TestPostgresMigrate(t *testing.T) {
	t.Parallel()
	db, schema := postgresDB(t)
	r := mustRun(t, "", "--db", db, "migrate", "--json")
	var got migrateOutput
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
		t.Fatalf("migrate --json: %v: %q", err, r.stdout)
	}
	if got.Path != redacted(t, db) || got.From != 0 || got.To < 1 {
		t.Errorf("migrate --json = %+v, want path %s from 0 to the current schema", got, redacted(t, db))
	}
	if !schemaExists(t, schema) {
		t.Fatalf("migrate did not create the schema %s", schema)
	}
	checkInvariants(t, db)
	r = mustRun(t, "", "--db", db, "migrate")
	if want := got.Path + ": schema " + strconv.Itoa(got.To) + ", up to date\n"; r.stdout != want {
		t.Errorf("second migrate printed %q, want %q", r.stdout, want)
	}
	if p := password(t, db); p != "" && strings.Contains(r.stdout+r.stderr, p) {
		t.Errorf("migrate printed the password")
	}
}

// TestPostgresVersion: version prints what it prints on a file and opens
// nothing.
func TestPostgresVersion(t *testing.T) {
	t.Parallel()
	db, schema := postgresDB(t)
	r := mustRun(t, "", "--db", db, "version", "--json")
	var v versionOutput
	if err := json.Unmarshal([]byte(r.stdout), &v); err != nil || v.Schema != store.SchemaVersion() || v.Go == "" {
		t.Errorf("version --json = %q (%v)", r.stdout, err)
	}
	if schemaExists(t, schema) {
		t.Errorf("version created the schema")
	}
}

// TestPostgresCommandsOfOtherAreas runs, on a store holding events, the
// commands of every other storage area: each must exit as it does on a
// file.
func TestPostgresCommandsOfOtherAreas(t *testing.T) {
	t.Parallel()
	db, _ := postgresDB(t)
	mustRun(t, events(3), "--db", db, "append", "order-1")
	mustRun(t, "", "--db", db, "append", "order-2", "--type", "t")
	checkInvariants(t, db)
	for _, tt := range []struct {
		args []string
		code int
	}{
		{[]string{"append", "order-1", "--type", "t", "--expected", "no-stream"}, exitConflict}, // a conflict looks for removed ids
		{[]string{"doctor"}, exitOK},
		{[]string{"projections"}, exitOK},
		{[]string{"catalog"}, exitOK},
		{[]string{"dlq", "list"}, exitOK},
		{[]string{"quarantine", "list"}, exitOK},
		{[]string{"effects", "list"}, exitOK},
		{[]string{"retention", "list"}, exitOK},
		{[]string{"retention", "set", "order-", "--max-count", "100"}, exitOK},
		{[]string{"scavenge", "--dry-run"}, exitOK},
		{[]string{"truncate", "order-1", "--before", "2"}, exitOK},
		{[]string{"delete", "order-2"}, exitOK},
		{[]string{"scavenge"}, exitOK},
		{[]string{"forget", "nobody"}, exitOK}, // a subject with no key gets a tombstone (docs/erasure.md)
		{[]string{"relay", "--to", "stdout", "--once"}, exitOK},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			r := run(t, "", append([]string{"--db", db}, tt.args...)...)
			if r.code != tt.code {
				t.Errorf("exit %d, want %d; stderr:\n%s", r.code, tt.code, r.stderr)
			}
		})
	}
}

// TestPostgresPasswordNeverPrinted: with an address whose role does not
// exist, every command fails cleanly, naming the address without its
// password. It needs the server: the connection must really be refused.
func TestPostgresPasswordNeverPrinted(t *testing.T) {
	t.Parallel()
	base := storetest.PostgresBase(t)
	const secret = "Pgcli-Secret-4711"
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	u.User = url.UserPassword("eventlite_no_such_role_"+hex.EncodeToString(b[:]), secret)
	db := u.String()
	dir := t.TempDir()
	for _, args := range [][]string{
		{"append", "s", "--type", "t"},
		{"read", "s"},
		{"streams", "--json"},
		{"tail"},
		{"migrate", "--json"},
		{"doctor"},
		{"backup", filepath.Join(dir, "copy.db")},
		{"restore", filepath.Join(dir, "copy.db")},
		{"scavenge", "--vacuum"},
		{"demo"},
	} {
		for _, env := range []map[string]string{nil, {"EVENTLITE_DB": db}} {
			full := args
			if env == nil {
				full = append([]string{"--db", db}, args...)
			} else if args[0] == "demo" {
				continue // the demo ignores $EVENTLITE_DB: it would run on its own file
			}
			r := runWith(t, t.Context(), env, "", full...)
			if strings.Contains(r.stdout+r.stderr, secret) {
				t.Errorf("eventlite %s printed the password:\nstdout %q\nstderr %q", strings.Join(args, " "), r.stdout, r.stderr)
			}
			if r.code == exitOK || !strings.HasPrefix(r.stderr, "eventlite: ") || strings.Count(r.stderr, "\n") != 1 {
				t.Errorf("eventlite %s: exit %d, stderr %q; want one line of error", strings.Join(args, " "), r.code, r.stderr)
			}
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("commands left files: %v", ents)
	}
}

// TestFileOnlyCommandsOnPostgres: the commands that work on a database
// file refuse a PostgreSQL address with exit 2 and "not supported on
// PostgreSQL", before connecting (the address points nowhere) and
// without creating a file.
func TestFileOnlyCommandsOnPostgres(t *testing.T) {
	t.Parallel()
	const secret = "Pgcli-Secret-0815"
	pg := "postgresql://app:" + secret + "@127.0.0.1:1/app?eventlite_schema=orders"
	dir := t.TempDir()
	file := filepath.Join(dir, "events.db")
	for _, tt := range []struct {
		name string
		env  map[string]string
		args []string
	}{
		{"backup", nil, []string{"--db", pg, "backup", filepath.Join(dir, "copy.db")}},
		{"backup through $EVENTLITE_DB", map[string]string{"EVENTLITE_DB": pg}, []string{"backup", filepath.Join(dir, "copy.db"), "--force"}},
		{"backup to PostgreSQL", nil, []string{"--db", file, "backup", pg}},
		{"restore", nil, []string{"--db", pg, "restore", filepath.Join(dir, "copy.db"), "--force"}},
		{"restore from PostgreSQL", nil, []string{"--db", file, "restore", pg}},
		{"demo", nil, []string{"--db", pg, "demo"}},
		{"scavenge --vacuum", nil, []string{"--db", pg, "scavenge", "--vacuum", "--json"}},
		{"scavenge --vacuum through $EVENTLITE_DB", map[string]string{"EVENTLITE_DB": strings.ToUpper(pg[:10]) + pg[10:]}, []string{"scavenge", "--vacuum"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := runWith(t, t.Context(), tt.env, "", tt.args...)
			if r.code != exitUsage || !strings.Contains(r.stderr, "not supported on PostgreSQL") {
				t.Errorf("exit %d, stderr %q; want %d saying not supported on PostgreSQL", r.code, r.stderr, exitUsage)
			}
			if strings.Contains(r.stdout+r.stderr, secret) {
				t.Errorf("printed the password: %q", r.stderr)
			}
			if r.stdout != "" || strings.Contains(r.stderr, "Usage:") {
				t.Errorf("printed more than the refusal: stdout %q, stderr %q", r.stdout, r.stderr)
			}
		})
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("the refusals left files: %v", ents)
	}
}

// TestHelpNamesPostgres: the help says how to point eventlite at
// PostgreSQL and which commands are file-only.
func TestHelpNamesPostgres(t *testing.T) {
	t.Parallel()
	help := strings.ReplaceAll(mustRun(t, "", "help").stdout, "\n", " ")
	for _, s := range []string{"postgres://", "eventlite_schema", "default eventlite", "backup, restore", "scavenge --vacuum", "demo --db", "not supported on PostgreSQL"} {
		if !strings.Contains(help, s) {
			t.Errorf("help lacks %q", s)
		}
	}
	if r := mustRun(t, "", "help", "migrate"); !strings.Contains(r.stdout, "eventlite_schema") {
		t.Errorf("help migrate does not say which schema it creates:\n%s", r.stdout)
	}
	for _, name := range []string{"backup", "restore", "scavenge", "demo"} {
		r := mustRun(t, "", "help", name)
		if !strings.Contains(strings.ReplaceAll(r.stdout, "\n", " "), "not supported on PostgreSQL") || !strings.Contains(r.stdout, "postgres://") {
			t.Errorf("help %s does not say it is not supported on PostgreSQL:\n%s", name, r.stdout)
		}
	}
}
