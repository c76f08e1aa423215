//go:build unix

package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/eventlite/eventlite/store/storetest"
)

// The users of the cross-user test: any ids work for root, no account is
// needed.
const (
	ownerUID  = 65534 // nobody
	readerUID = 65533
	sharedGID = 65530
)

// osUser runs the real CLI (TestMainProcess) as another OS user.
type osUser struct {
	bin         string // a copy of the test binary that every user may run
	uid, gid    int
	extraGroups []int
}

// crossUserSetup copies the test binary where other users may run it and
// returns a sticky world-writable directory, like /tmp, under a temp dir
// they may enter. It skips unless the test runs as root, which alone may
// run processes as other users.
func crossUserSetup(t *testing.T) (bin, dir string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to run the CLI as other OS users (syscall.Credential); planAccess's unit test covers the decision")
	}
	base := t.TempDir()
	for d := base; d != filepath.Dir(d) && d != os.TempDir(); d = filepath.Dir(d) {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	bin = filepath.Join(base, "eventlite.test")
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	dir = filepath.Join(base, "shared")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o777|os.ModeSticky); err != nil {
		t.Fatal(err)
	}
	return bin, dir
}

func (u osUser) command(args ...string) *exec.Cmd {
	cmd := exec.Command(u.bin, "-test.run=^TestMainProcess$", "-test.count=1")
	a, _ := json.Marshal(args)
	cmd.Env = append(os.Environ(), "EVENTLITE_MAIN_ARGS="+string(a), "EVENTLITE_DB=")
	groups := make([]uint32, len(u.extraGroups))
	for i, g := range u.extraGroups {
		groups[i] = uint32(g)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(u.uid), Gid: uint32(u.gid), Groups: groups}}
	return cmd
}

func (u osUser) run(t *testing.T, args ...string) result {
	t.Helper()
	cmd := u.command(args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errorsAs(err, &ee) {
		t.Fatalf("run as uid %d: %v", u.uid, err)
	}
	return result{code: cmd.ProcessState.ExitCode(), stdout: stdout.String(), stderr: stderr.String()}
}

func errorsAs(err error, ee **exec.ExitError) bool {
	e, ok := err.(*exec.ExitError)
	*ee = e
	return ok
}

func (u osUser) mustRun(t *testing.T, args ...string) result {
	t.Helper()
	r := u.run(t, args...)
	if r.code != exitOK {
		t.Fatalf("as uid %d, eventlite %q: exit %d, stderr:\n%s", u.uid, args, r.code, r.stderr)
	}
	return r
}

// ownedBy lists the files in dir owned by uid.
func ownedBy(t *testing.T, dir string, uid int) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		fi, err := os.Stat(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if int(fi.Sys().(*syscall.Stat_t).Uid) == uid {
			out = append(out, e.Name())
		}
	}
	return out
}

// A read by another OS user does not lock the owner out. Today's failure:
// the reader's streams left x.db-wal and x.db-shm owned by the reader, mode
// 0644, and the owner's next append failed with "attempt to write a
// readonly database".
func TestOtherUserReadDoesNotLockOwnerOut(t *testing.T) {
	t.Parallel()
	bin, dir := crossUserSetup(t)
	owner := osUser{bin: bin, uid: ownerUID, gid: ownerUID}
	reader := osUser{bin: bin, uid: readerUID, gid: readerUID}
	db := filepath.Join(dir, "x.db")
	owner.mustRun(t, "append", "s", "--type", "t", "--db", db)

	// At rest (no process has it open): the reader is refused, with what
	// sharing needs, and creates nothing.
	before := storetest.DirDigest(t, filepath.Dir(db))
	for _, args := range readCommands {
		r := reader.run(t, append(args, "--db", db)...)
		if r.code != exitInvalid || !strings.Contains(r.stderr, "belongs to uid 65534") || !strings.Contains(r.stderr, "chmod g+w") {
			t.Errorf("%q as another user: exit %d (want %d), stderr %q", args, r.code, exitInvalid, r.stderr)
		}
	}
	if diff := cmp.Diff(before, storetest.DirDigest(t, filepath.Dir(db))); diff != "" {
		t.Errorf("the other user's reads changed the directory (-before +after):\n%s", diff)
	}
	owner.mustRun(t, "append", "s", "--type", "t", "--db", db)

	// While the owner's process has it open: the reader reads it through
	// the owner's -wal and -shm, read-only, and creates nothing.
	follow := owner.command("tail", "--follow", "--db", db)
	out, err := follow.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	follow.Stderr = io.Discard
	if err := follow.Start(); err != nil {
		t.Fatal(err)
	}
	defer follow.Process.Kill()
	sc := bufio.NewScanner(out)
	for range 2 { // the two events: the follower has the database open
		if !sc.Scan() {
			t.Fatalf("tail --follow ended: %v", sc.Err())
		}
	}
	r := reader.mustRun(t, "read", "s", "--db", db)
	if n := len(lines(r.stdout)); n != 2 {
		t.Errorf("the other user read %d events, want 2:\n%s", n, r.stdout)
	}
	if mine := ownedBy(t, dir, readerUID); len(mine) != 0 {
		t.Errorf("the other user's read left %v", mine)
	}
	owner.mustRun(t, "append", "s", "--type", "t", "--id", "third", "--db", db)
	if !sc.Scan() || !strings.Contains(sc.Text(), `"third"`) {
		t.Errorf("the owner's follower after the other user's read: %q %v", sc.Text(), sc.Err())
	}
	if err := follow.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	go io.Copy(io.Discard, out)
	if err := follow.Wait(); err != nil {
		t.Errorf("tail --follow: %v", err)
	}
	owner.mustRun(t, "append", "s", "--type", "t", "--db", db)
	if mine := ownedBy(t, dir, readerUID); len(mine) != 0 {
		t.Errorf("the other user left %v", mine)
	}
}

// Shared as docs/operations.md says (a group that owns the file and its setgid
// directory, with write permission), another user reads and writes the
// file at rest, and the owner still appends.
func TestOtherUserReadsSharedGroup(t *testing.T) {
	t.Parallel()
	bin, base := crossUserSetup(t)
	dir := filepath.Join(base, "group")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, 0, sharedGID); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o775|os.ModeSetgid); err != nil {
		t.Fatal(err)
	}
	owner := osUser{bin: bin, uid: ownerUID, gid: ownerUID, extraGroups: []int{sharedGID}}
	reader := osUser{bin: bin, uid: readerUID, gid: readerUID, extraGroups: []int{sharedGID}}
	db := filepath.Join(dir, "x.db")
	owner.mustRun(t, "append", "s", "--type", "t", "--db", db)
	if err := os.Chmod(db, 0o664); err != nil { // the owner's chmod g+w
		t.Fatal(err)
	}
	for _, args := range readCommands {
		reader.mustRun(t, append(args, "--db", db)...)
	}
	owner.mustRun(t, "append", "s", "--type", "t", "--db", db)
	reader.mustRun(t, "append", "s", "--type", "t", "--db", db) // shared, the other user writes too
	owner.mustRun(t, "append", "s", "--type", "t", "--db", db)
	if r := reader.mustRun(t, "read", "s", "--db", db); len(lines(r.stdout)) != 4 {
		t.Errorf("the other user read:\n%s", r.stdout)
	}
	if mine := ownedBy(t, dir, readerUID); len(mine) != 0 {
		t.Errorf("the other user left %v", mine)
	}
}
