package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	cloudevent "github.com/cloudevents/sdk-go/v2/event"
	"github.com/google/go-cmp/cmp"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/storetest"
)

// result is what one run of the CLI left behind.
type result struct {
	code           int
	stdout, stderr string
}

// run runs the CLI in-process with an empty environment and stdin as its
// input.
func run(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	return runWith(t, t.Context(), nil, stdin, args...)
}

// runWith runs the CLI with ctx and the environment env.
func runWith(t *testing.T, ctx context.Context, env map[string]string, stdin string, args ...string) result {
	t.Helper()
	var stdout, stderr bytes.Buffer
	m := &Main{
		Stdin:  strings.NewReader(stdin),
		Stdout: &stdout,
		Stderr: &stderr,
		Getenv: func(k string) string { return env[k] },
	}
	code := m.Run(ctx, args)
	return result{code: code, stdout: stdout.String(), stderr: stderr.String()}
}

// mustRun runs the CLI and fails the test unless it exits 0.
func mustRun(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	r := run(t, stdin, args...)
	if r.code != exitOK {
		t.Fatalf("eventlite %q: exit %d, stderr:\n%s", args, r.code, r.stderr)
	}
	return r
}

// newDB returns the path of a database file, not yet created, in a
// directory the test removes.
func newDB(t *testing.T) string {
	t.Helper()
	return filepath.Join(t.TempDir(), "events.db")
}

// checkInvariants checks the store's invariants when the test ends.
func checkInvariants(t *testing.T, db string) {
	t.Helper()
	storetest.MustOpenPath(t, db, nil)
}

// lines splits output into its lines.
func lines(out string) []string {
	if out == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(out, "\n"), "\n")
}

// decodeLines parses JSON Lines output with envelope and with the
// CloudEvents SDK, and returns envelope's events.
func decodeLines(t *testing.T, out string) []envelope.Event {
	t.Helper()
	var evs []envelope.Event
	for i, line := range lines(out) {
		e, err := envelope.DecodeJSON([]byte(line), 0)
		if err != nil {
			t.Fatalf("line %d: envelope.DecodeJSON: %v\n%s", i, err, line)
		}
		ce := cloudevent.New()
		if err := ce.UnmarshalJSON([]byte(line)); err != nil {
			t.Fatalf("line %d: sdk-go UnmarshalJSON: %v\n%s", i, err, line)
		}
		if err := ce.Validate(); err != nil {
			t.Fatalf("line %d: sdk-go Validate: %v\n%s", i, err, line)
		}
		if ce.ID() != e.ID || ce.Subject() != e.Stream || ce.Type() != e.Type {
			t.Fatalf("line %d: sdk-go reads id %q subject %q type %q, envelope %q %q %q", i, ce.ID(), ce.Subject(), ce.Type(), e.ID, e.Stream, e.Type)
		}
		evs = append(evs, e)
	}
	return evs
}

func versions(evs []envelope.Event) []int64 {
	var vs []int64
	for _, e := range evs {
		vs = append(vs, e.StreamVersion)
	}
	return vs
}

func TestFlagPlacement(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string // %s is the database path
		want appendOutput
	}{
		{"globals before the command", []string{"--db", "%s", "--tenant", "acme", "--json", "append", "s", "--type", "t"}, appendOutput{Tenant: "acme", Stream: "s", Version: 1}},
		{"globals after the command", []string{"append", "--db", "%s", "--json", "--tenant", "acme", "s", "--type", "t"}, appendOutput{Tenant: "acme", Stream: "s", Version: 1}},
		{"globals after the positional", []string{"append", "s", "--type", "t", "--db", "%s", "--tenant=acme", "--json"}, appendOutput{Tenant: "acme", Stream: "s", Version: 1}},
		{"command flags before the positional", []string{"--json", "append", "--type", "t", "--expected", "no-stream", "--db=%s", "s"}, appendOutput{Tenant: "default", Stream: "s", Version: 1}},
		{"single dashes and =", []string{"-json", "append", "-type=t", "s", "-db", "%s", "-expected=0"}, appendOutput{Tenant: "default", Stream: "s", Version: 1}},
		{"a global after the command overrides one before", []string{"--tenant", "a", "--json", "append", "s", "--tenant", "b", "--type", "t", "--db", "%s"}, appendOutput{Tenant: "b", Stream: "s", Version: 1}},
		{"-- ends the flags", []string{"--json", "--db", "%s", "append", "--type", "t", "--", "-s"}, appendOutput{Tenant: "default", Stream: "-s", Version: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			db := newDB(t)
			args := make([]string, len(tt.args))
			for i, a := range tt.args {
				args[i] = strings.ReplaceAll(a, "%s", db)
			}
			r := mustRun(t, "", args...)
			var got appendOutput
			if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
				t.Fatalf("stdout %q: %v", r.stdout, err)
			}
			tt.want.FirstPosition, tt.want.LastPosition = 1, 1
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("append result (-want +got):\n%s", diff)
			}
			// The read command takes its flags anywhere too.
			r = mustRun(t, "", "read", "--tenant", got.Tenant, "--db", db, "--limit", "1", "--", tt.want.Stream)
			if diff := cmp.Diff([]int64{1}, versions(decodeLines(t, r.stdout))); diff != "" {
				t.Errorf("read versions (-want +got):\n%s", diff)
			}
		})
	}
}

func TestUsageErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		args   []string
		stderr []string // each must appear on stderr
	}{
		{"no command", nil, []string{"no command given", "Usage: eventlite"}},
		{"unknown command", []string{"frobnicate"}, []string{`unknown command "frobnicate"`, "Usage: eventlite", "Exit codes:"}},
		{"unknown global flag", []string{"--nope", "streams"}, []string{"-nope", "Usage: eventlite"}},
		{"unknown command flag", []string{"append", "s", "--type", "t", "--nope"}, []string{"append: flag provided but not defined: -nope", "Usage: eventlite append"}},
		{"malformed --expected", []string{"append", "s", "--type", "t", "--expected", "banana"}, []string{`"banana"`, "any, no-stream, exists or a version number"}},
		{"negative --expected", []string{"append", "s", "--type", "t", "--expected", "-1"}, []string{"any, no-stream, exists or a version number"}},
		{"--expected past the largest version", []string{"append", "s", "--type", "t", "--expected", "2147483648"}, []string{"to 2147483647"}},
		{"malformed --tenant", []string{"streams", "--tenant", "a b"}, []string{"A-Z a-z 0-9 . _ -"}},
		{"malformed --from", []string{"read", "s", "--from", "x"}, []string{"whole number"}},
		{"negative --limit", []string{"read", "s", "--limit", "-1"}, []string{"whole number"}},
		{"missing --db value", []string{"streams", "--db"}, []string{"flag needs an argument: -db"}},
		{"empty --db", []string{"streams", "--db", ""}, []string{"--db: empty path"}},
		{"missing positional", []string{"append", "--type", "t"}, []string{"append takes 1 argument(s) (STREAM), got 0", "Usage: eventlite append"}},
		{"extra positional", []string{"read", "a", "b"}, []string{"read takes 1 argument(s) (STREAM), got 2"}},
		{"positional to a command that takes none", []string{"streams", "a"}, []string{"streams takes no arguments, got 1"}},
		{"--data without --type", []string{"append", "s", "--data", "{}"}, []string{"--data needs --type"}},
		{"--id without --type", []string{"append", "s", "--id", "x"}, []string{"--id needs --type"}},
		{"help for an unknown command", []string{"help", "frobnicate"}, []string{`unknown command "frobnicate"`}},
		{"help with two commands", []string{"help", "read", "tail"}, []string{"at most one command"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			db := filepath.Join(dir, "events.db")
			args := tt.args
			if tt.name != "missing --db value" && tt.name != "empty --db" {
				args = append([]string{"--db", db}, args...)
			}
			r := run(t, "", args...)
			if r.code != exitUsage {
				t.Fatalf("exit %d, want %d; stderr:\n%s", r.code, exitUsage, r.stderr)
			}
			if r.stdout != "" {
				t.Errorf("stdout = %q, want nothing", r.stdout)
			}
			for _, s := range tt.stderr {
				if !strings.Contains(r.stderr, s) {
					t.Errorf("stderr lacks %q:\n%s", s, r.stderr)
				}
			}
			if !strings.HasPrefix(r.stderr, "eventlite: ") {
				t.Errorf("stderr does not start with %q:\n%s", "eventlite: ", r.stderr)
			}
			if _, err := os.Stat(db); err == nil {
				t.Errorf("a usage error created the database")
			}
		})
	}
}

func TestDatabaseDefault(t *testing.T) {
	// t.Chdir: not parallel.
	tests := []struct {
		name string
		env  map[string]string
		args []string
		want string // the file that must exist, relative to the working directory
	}{
		{"./eventlite.db", nil, nil, "eventlite.db"},
		{"EVENTLITE_DB", map[string]string{"EVENTLITE_DB": "from-env.db"}, nil, "from-env.db"},
		{"--db over EVENTLITE_DB", map[string]string{"EVENTLITE_DB": "from-env.db"}, []string{"--db", "from-flag.db"}, "from-flag.db"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			t.Chdir(dir)
			args := append([]string{"append", "s", "--type", "t"}, tt.args...)
			if r := runWith(t, t.Context(), tt.env, "", args...); r.code != exitOK {
				t.Fatalf("append: exit %d: %s", r.code, r.stderr)
			}
			entries, err := os.ReadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			var dbs []string
			for _, e := range entries {
				if strings.HasSuffix(e.Name(), ".db") {
					dbs = append(dbs, e.Name())
				}
			}
			if diff := cmp.Diff([]string{tt.want}, dbs); diff != "" {
				t.Errorf("database files (-want +got):\n%s", diff)
			}
			r := runWith(t, t.Context(), tt.env, "", append([]string{"read", "s"}, tt.args...)...)
			if r.code != exitOK || len(lines(r.stdout)) != 1 {
				t.Errorf("read: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
			}
		})
	}
}

func TestHelp(t *testing.T) {
	t.Parallel()
	var exitLines []string
	for _, e := range exitCodes {
		exitLines = append(exitLines, fmt.Sprintf("  %d  %s\n", e.code, e.meaning))
	}
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"help", []string{"help"}, append([]string{"Commands:", "\n  append ", "\n  read ", "\n  tail ", "\n  streams ", "\n  version ", "\n  help ", "--db PATH", "--json", "--tenant", "Exit codes:\n"}, exitLines...)},
		{"-h", []string{"-h"}, []string{"Commands:", "Exit codes:"}},
		{"--help", []string{"--help"}, []string{"Commands:", "Exit codes:"}},
		{"help append", []string{"help", "append"}, []string{"Usage: eventlite append STREAM --type TYPE", "--expected E", "--data JSON", "--id ID", "--source URI", "Global flags:"}},
		{"append -h", []string{"append", "-h"}, []string{"Usage: eventlite append STREAM"}},
		{"append STREAM --help", []string{"append", "s", "--type", "t", "--help"}, []string{"Usage: eventlite append STREAM"}},
		{"read -h", []string{"read", "-h"}, []string{"Usage: eventlite read STREAM", "--from VERSION", "--backward", "--limit N"}},
		{"tail -h", []string{"tail", "-h"}, []string{"Usage: eventlite tail", "--from POSITION", "--follow"}},
		{"streams -h", []string{"streams", "-h"}, []string{"Usage: eventlite streams"}},
		{"version -h", []string{"version", "-h"}, []string{"Usage: eventlite version"}},
		{"help -h", []string{"help", "-h"}, []string{"Commands:"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			db := newDB(t)
			r := run(t, "", append([]string{"--db", db}, tt.args...)...)
			if r.code != exitOK || r.stderr != "" {
				t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
			}
			for _, s := range tt.want {
				if !strings.Contains(r.stdout, s) {
					t.Errorf("help lacks %q:\n%s", s, r.stdout)
				}
			}
			if _, err := os.Stat(db); err == nil {
				t.Errorf("help created the database")
			}
		})
	}
}

func TestExitCodesAreDistinct(t *testing.T) {
	t.Parallel()
	var got []int
	for _, e := range exitCodes {
		got = append(got, e.code)
	}
	if diff := cmp.Diff([]int{0, 1, 2, 3, 4, 5, 6, 7, 8}, got); diff != "" {
		t.Errorf("exit code table (-want +got):\n%s", diff)
	}
}

func TestVersion(t *testing.T) {
	t.Parallel()
	r := mustRun(t, "", "version")
	for _, s := range []string{"eventlite ", runtime.Version(), fmt.Sprintf("schema version %d", store.SchemaVersion()), fmt.Sprintf("postgres schema version %d", store.PostgresSchemaVersion())} {
		if !strings.Contains(r.stdout, s) {
			t.Errorf("version lacks %q:\n%s", s, r.stdout)
		}
	}
	r = mustRun(t, "", "version", "--json")
	var got map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
		t.Fatalf("version --json printed %q: %v", r.stdout, err)
	}
	want := map[string]any{"version": buildVersion(), "go": runtime.Version(), "schema": float64(store.SchemaVersion()), "postgres_schema": float64(store.PostgresSchemaVersion())}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("version --json (-want +got):\n%s", diff)
	}
}

func TestInterrupted(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	mustRun(t, "", "append", "s", "--type", "t", "--db", db)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	tests := []struct {
		name string
		args []string
		want int
	}{
		{"a finite read", []string{"read", "s"}, exitIncomplete},
		{"a finite tail", []string{"tail"}, exitIncomplete},
		{"an append", []string{"append", "s", "--type", "t"}, exitIncomplete},
		{"a follow", []string{"tail", "--follow"}, exitOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := runWith(t, ctx, nil, "", append(tt.args, "--db", db)...)
			if r.code != tt.want {
				t.Errorf("exit %d, want %d; stderr:\n%s", r.code, tt.want, r.stderr)
			}
			if tt.want == exitIncomplete && !strings.Contains(r.stderr, "interrupted") {
				t.Errorf("stderr does not say it was interrupted:\n%s", r.stderr)
			}
		})
	}
}

func TestLogLevel(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	// Opening a new file applies the migrations, logged at info level:
	// quiet by default, shown with --verbose or EVENTLITE_LOG.
	r := mustRun(t, "", "append", "s", "--type", "t", "--db", db)
	if r.stderr != "" {
		t.Errorf("stderr by default = %q, want nothing", r.stderr)
	}
	r = runWith(t, t.Context(), map[string]string{"EVENTLITE_LOG": "info"}, "", "append", "s2", "--type", "t", "--db", newDB(t))
	if r.code != exitOK || !strings.Contains(r.stderr, "applied migration") {
		t.Errorf("EVENTLITE_LOG=info: exit %d, stderr %q, want the migrations logged", r.code, r.stderr)
	}
	r = mustRun(t, "", "append", "s3", "--type", "t", "--verbose", "--db", newDB(t))
	if !strings.Contains(r.stderr, "applied migration") {
		t.Errorf("--verbose: stderr %q, want the migrations logged", r.stderr)
	}
	r = runWith(t, t.Context(), map[string]string{"EVENTLITE_LOG": "loud"}, "", "streams", "--db", db)
	if r.code != exitOK || !strings.Contains(r.stderr, "EVENTLITE_LOG") {
		t.Errorf("EVENTLITE_LOG=loud: exit %d, stderr %q, want a warning", r.code, r.stderr)
	}
}
