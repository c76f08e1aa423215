package main

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/backup"
)

// fillDB appends n events (streams of 5) to the store at db.
func fillDB(t *testing.T, db, prefix string, n int) {
	t.Helper()
	ctx := context.Background()
	s, err := store.Open(ctx, db, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if _, err := s.Append(ctx, "default", fmt.Sprintf("%s-%d", prefix, i/5), store.Any,
			envelope.Event{Source: "/test", Type: "t.filled", Data: fmt.Appendf(nil, `{"i":%d}`, i)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

func readBytes(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestBackupCommand(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	fillDB(t, db, "s", 42)
	dest := filepath.Join(t.TempDir(), "copy.db")

	r := mustRun(t, "", "backup", dest, "--db", db, "--json")
	var out map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatalf("--json output %q: %v", r.stdout, err)
	}
	want := map[string]any{"path": dest, "events": 42.0, "streams": 9.0, "head_position": "42"}
	for k, v := range want {
		if out[k] != v {
			t.Errorf("%s: %v (%T), want %v", k, out[k], out[k], v)
		}
	}
	if b, _ := out["bytes"].(float64); b <= 0 {
		t.Errorf("bytes %v", out["bytes"])
	}
	if _, ok := out["seconds"].(float64); !ok || len(out) != 6 {
		t.Errorf("output %v: want exactly path, events, streams, head_position, bytes, seconds", out)
	}
	// DEST exists: exit 4 and unchanged, unless --force.
	fillDB(t, db, "more", 3)
	before := readBytes(t, dest)
	r = run(t, "", "backup", dest, "--db", db)
	if r.code != exitInvalid || !strings.Contains(r.stderr, "--force") {
		t.Fatalf("backup over an existing DEST: exit %d, stderr %q; want 4 naming --force", r.code, r.stderr)
	}
	if readBytes(t, dest) != before {
		t.Fatalf("the refused DEST changed")
	}
	r = mustRun(t, "", "backup", dest, "--db", db, "--force")
	// What it holds: events, streams, head position, size, time taken.
	for _, want := range []string{"45 events", "in 10 streams", "head position 45", " KiB, in ", "MB/s"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("backup --force printed %q, without %q", r.stdout, want)
		}
	}

	// No database: exit 5, nothing created.
	missing := filepath.Join(t.TempDir(), "missing.db")
	if r := run(t, "", "backup", dest+"2", "--db", missing); r.code != exitNotFound {
		t.Errorf("backup of a missing database: exit %d, stderr %q; want 5", r.code, r.stderr)
	}
	if _, err := os.Stat(missing); err == nil {
		t.Errorf("backup created the missing database")
	}
	// Not an eventlite database: exit 4.
	foreign := filepath.Join(t.TempDir(), "foreign.db")
	if err := os.WriteFile(foreign, []byte(strings.Repeat("plain text\n", 100)), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := run(t, "", "backup", dest+"3", "--db", foreign); r.code != exitInvalid {
		t.Errorf("backup of a text file: exit %d, stderr %q; want 4", r.code, r.stderr)
	}
	checkInvariants(t, dest)
}

func TestRestoreCommand(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	live := filepath.Join(dir, "live.db")
	fillDB(t, live, "b", 10)
	bak := filepath.Join(dir, "backup.db")
	mustRun(t, "", "backup", bak, "--db", live)

	// Into a database that does not exist.
	fresh := newDB(t)
	r := mustRun(t, "", "restore", bak, "--db", fresh, "--json")
	var out map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatalf("--json output %q: %v", r.stdout, err)
	}
	if out["events"] != 10.0 || out["head_position"] != "10" || out["sequence"] != "10" || out["previous_events"] != 0.0 {
		t.Errorf("restore --json: %v", out)
	}
	checkInvariants(t, fresh)

	// Over a database with events: exit 4 and unchanged, then --force.
	target := newDB(t)
	fillDB(t, target, "old", 25)
	before := readBytes(t, target)
	r = run(t, "", "restore", bak, "--db", target)
	if r.code != exitInvalid || !strings.Contains(r.stderr, "25 events") || !strings.Contains(r.stderr, "--force") {
		t.Fatalf("restore over 25 events: exit %d, stderr %q; want 4 naming the events and --force", r.code, r.stderr)
	}
	if readBytes(t, target) != before {
		t.Fatalf("the refused target changed")
	}
	mustRun(t, "", "restore", bak, "--db", target, "--force")
	r = mustRun(t, "", "append", "after", "--type", "t.after", "--db", target, "--json")
	var appended struct {
		Position string `json:"last_position"`
	}
	_ = json.Unmarshal([]byte(lines(r.stdout)[0]), &appended)
	if p, err := strconv.ParseInt(appended.Position, 10, 64); err != nil || p <= 25 {
		t.Errorf("the first append after the restore: %q; want a position above 25, the old database's", r.stdout)
	}
	if r := mustRun(t, "", "doctor", "--db", target); !strings.Contains(r.stdout, "position_holes_restore") {
		t.Errorf("doctor after the restore does not tell the restore's hole:\n%s", r.stdout)
	}

	// SRC not eventlite's, or corrupt: exit 4, target unchanged.
	foreign := filepath.Join(dir, "foreign.db")
	if err := os.WriteFile(foreign, []byte(strings.Repeat("plain text\n", 100)), 0o644); err != nil {
		t.Fatal(err)
	}
	corrupt := filepath.Join(dir, "corrupt.db")
	b := []byte(readBytes(t, bak))
	for i := 4096; i < len(b); i++ {
		b[i] = byte(i)
	}
	if err := os.WriteFile(corrupt, b, 0o644); err != nil {
		t.Fatal(err)
	}
	before = readBytes(t, target)
	for _, src := range []string{foreign, corrupt} {
		r := run(t, "", "restore", src, "--db", target, "--force")
		if r.code != exitInvalid {
			t.Errorf("restore from %s: exit %d, stderr %q; want 4", filepath.Base(src), r.code, r.stderr)
		}
		if readBytes(t, target) != before {
			t.Fatalf("restore from %s changed the target", filepath.Base(src))
		}
	}
	if r := run(t, "", "restore", filepath.Join(dir, "nope.db"), "--db", target); r.code != exitNotFound {
		t.Errorf("restore from a missing file: exit %d; want 5", r.code)
	}

	// Another process holds the target's write lock: exit 7, unchanged.
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^TestLockHelperProcess$", "-test.count=1", "-test.timeout=2m")
	cmd.Env = append(os.Environ(), "EVENTLITE_LOCK_DB="+target)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	if line, err := bufio.NewReader(stdout).ReadString('\n'); line != "LOCKED\n" {
		t.Fatalf("lock child said %q (%v)", line, err)
	}
	before = readBytes(t, target)
	r = run(t, "", "restore", bak, "--db", target, "--force")
	if r.code != exitBusy || !strings.Contains(r.stderr, "write lock") {
		t.Errorf("restore while another process holds the write lock: exit %d, stderr %q; want 7", r.code, r.stderr)
	}
	if readBytes(t, target) != before {
		t.Errorf("the locked target changed")
	}
	_ = stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("lock child: %v", err)
	}
	checkInvariants(t, target)
}

// TestLockHelperProcess is not a test: it is the body of the child process
// that TestRestoreCommand starts to hold a database's write lock
// (BEGIN IMMEDIATE) until its stdin closes. Without EVENTLITE_LOCK_DB it
// returns at once.
func TestLockHelperProcess(t *testing.T) {
	path := os.Getenv("EVENTLITE_LOCK_DB")
	if path == "" {
		return
	}
	db, err := sql.Open("sqlite", "file:"+path+"?_txlock=immediate&_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	fmt.Println("LOCKED")
	_, _ = io.Copy(io.Discard, os.Stdin)
	_ = tx.Rollback()
	_ = db.Close()
	os.Exit(0)
}

func TestBackupHelp(t *testing.T) {
	t.Parallel()
	r := mustRun(t, "", "help")
	for _, want := range []string{"\n  backup ", "\n  restore "} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("help lacks %q", want)
		}
	}
	r = mustRun(t, "", "help", "backup")
	if !strings.Contains(r.stdout, "Usage: eventlite backup DEST [--force] [--json]") || !strings.Contains(r.stdout, "--force") {
		t.Errorf("help backup:\n%s", r.stdout)
	}
	r = mustRun(t, "", "help", "restore")
	if !strings.Contains(r.stdout, "Usage: eventlite restore SRC [--force]") {
		t.Errorf("help restore:\n%s", r.stdout)
	}
}

// TestCopyReporter checks the progress a backup or restore shows on
// stderr: a bar on a terminal that names the phase and reaches the total,
// nothing between the few-seconds lines otherwise.
func TestCopyReporter(t *testing.T) {
	t.Parallel()
	steps := []backup.Progress{
		{Phase: backup.PhaseCopy, Pages: 0, TotalPages: 256, PageSize: 4096},
		{Phase: backup.PhaseCopy, Pages: 128, TotalPages: 256, PageSize: 4096},
		{Phase: backup.PhaseCopy, Pages: 256, TotalPages: 256, PageSize: 4096},
		{Phase: backup.PhaseVerify, Pages: 256, TotalPages: 256, PageSize: 4096},
	}
	var tty strings.Builder
	r := &copyReporter{c: &cli{stderr: &tty}, name: "backup", tty: true}
	for _, p := range steps {
		r.progress(p)
	}
	r.finish()
	for _, want := range []string{"backup: copy", "backup: verify", "100%"} {
		if !strings.Contains(tty.String(), want) {
			t.Errorf("the bar on a terminal lacks %q:\n%q", want, tty.String())
		}
	}
	var plain strings.Builder
	r = newCopyReporter(&cli{stderr: &plain}, "restore")
	for _, p := range steps {
		r.progress(p)
	}
	r.finish()
	if plain.Len() != 0 {
		t.Errorf("not a terminal: a progress line within the first seconds: %q", plain.String())
	}
}

// TestRestoreUnverifiedExits8: a restore whose check after the commit
// failed exits 8, saying the database was replaced, also when the check
// failed on an interruption or a busy file (which alone exit 6 and 7).
func TestRestoreUnverifiedExits8(t *testing.T) {
	t.Parallel()
	for _, err := range []error{
		&backup.RestoreUnverifiedError{Path: "x.db", Problems: []string{"it holds 19 events up to position 20; the backup held 20 up to 20"}},
		&backup.RestoreUnverifiedError{Path: "x.db", Err: context.Canceled},
		&backup.RestoreUnverifiedError{Path: "x.db", Err: store.ErrBusy},
	} {
		code, msg := classify(backupError(fmt.Errorf("restore: %w", err)))
		if code != exitReplaced || !strings.Contains(msg, "replaced") || !strings.Contains(msg, "doctor") {
			t.Errorf("%v: exit %d %q, want %d saying the database was replaced and to run doctor", err, code, msg, exitReplaced)
		}
	}
}

// TestRestoreMinSequenceLimit: --min-sequence past the highest position
// (9223372036854775806) exits 4 and creates nothing; restored up to it,
// the next append exits 4 naming the limit and stores nothing (today it
// was acknowledged at a negative position).
func TestRestoreMinSequenceLimit(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	live := filepath.Join(dir, "live.db")
	fillDB(t, live, "b", 3)
	bak := filepath.Join(dir, "backup.db")
	mustRun(t, "", "backup", bak, "--db", live)
	target := newDB(t)
	r := run(t, "", "restore", bak, "--db", target, "--min-sequence", "9223372036854775807")
	if r.code != exitInvalid || !strings.Contains(r.stderr, "9223372036854775806") || !strings.Contains(r.stderr, "min-sequence") {
		t.Fatalf("restore --min-sequence 2^63-1: exit %d, stderr %q; want 4 naming the flag and the highest position", r.code, r.stderr)
	}
	if _, err := os.Stat(target); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the refused restore created the database: %v", err)
	}
	mustRun(t, "", "restore", bak, "--db", target, "--min-sequence", "9223372036854775805")
	r = mustRun(t, events(1), "append", "s", "--db", target, "--json")
	if !strings.Contains(r.stdout, `"last_position":9223372036854775806`) && !strings.Contains(r.stdout, `"last_position":"9223372036854775806"`) {
		t.Errorf("the last position's append: %s", r.stdout)
	}
	r = run(t, "", "append", "s", "--type", "t", "--db", target)
	if r.code != exitInvalid || !strings.Contains(r.stderr, "9223372036854775806") {
		t.Fatalf("append past the highest position: exit %d, stderr %q; want 4 naming it", r.code, r.stderr)
	}
	// A retry of the last append still returns its first result.
	if r := mustRun(t, events(1), "append", "s", "--db", target, "--json"); !strings.Contains(r.stdout, "9223372036854775806") {
		t.Errorf("a retry of the last append: %s", r.stdout)
	}
	if n := len(lines(mustRun(t, "", "read", "s", "--db", target).stdout)); n != 1 {
		t.Errorf("the stream holds %d events, want 1", n)
	}
	checkInvariants(t, target)
}
