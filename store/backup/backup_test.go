package backup_test

import (
	"bufio"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/backup"
)

// The backup tests' own child processes: this test binary re-executed with
// -test.run=^TestBackupHelperProcess$ and EVENTLITE_BACKUP_HELPER naming
// what the child does.
const (
	envBackupHelper = "EVENTLITE_BACKUP_HELPER" // lock | backup
	envBackupSrc    = "EVENTLITE_BACKUP_SRC"
	envBackupDest   = "EVENTLITE_BACKUP_DEST"
)

// TestBackupHelperProcess is not a test: it is the body of the child
// processes below. Without EVENTLITE_BACKUP_HELPER it returns at once.
//
//	lock:   takes the write lock of EVENTLITE_DB (BEGIN IMMEDIATE), says
//	        LOCKED, and holds it until its stdin closes.
//	backup: backs up EVENTLITE_BACKUP_SRC to EVENTLITE_BACKUP_DEST one page
//	        per step, says STEP after the first step and then waits on
//	        stdin forever (the parent kills it there).
//	restore: restores EVENTLITE_BACKUP_SRC into EVENTLITE_BACKUP_DEST with
//	        Force, one page per step, and stops after the first page copied
//	        into the target as backup does.
func TestBackupHelperProcess(t *testing.T) {
	switch os.Getenv(envBackupHelper) {
	case "":
		return
	case "lock":
		db, err := sql.Open("sqlite", "file:"+os.Getenv(envDB)+"?_txlock=immediate&_pragma=busy_timeout(5000)")
		if err != nil {
			helperFail("open: %v", err)
		}
		tx, err := db.Begin()
		if err != nil {
			helperFail("begin immediate: %v", err)
		}
		fmt.Println("LOCKED")
		_, _ = io.Copy(io.Discard, os.Stdin)
		_ = tx.Rollback()
		_ = db.Close()
		os.Exit(0)
	case "backup":
		first := true
		_, err := backup.Create(context.Background(), os.Getenv(envBackupSrc), os.Getenv(envBackupDest), &backup.Options{
			PagesPerStep: 1,
			Progress: func(p backup.Progress) {
				if p.Phase == backup.PhaseCopy && first {
					first = false
					fmt.Println("STEP")
					_, _ = io.Copy(io.Discard, os.Stdin)
					select {} // the parent kills us here
				}
			},
		})
		helperFail("backup returned: %v", err)
	case "restore":
		first := true
		_, err := backup.Restore(context.Background(), os.Getenv(envBackupSrc), os.Getenv(envBackupDest), &backup.RestoreOptions{
			Force:        true,
			PagesPerStep: 1,
			Progress: func(p backup.Progress) {
				if p.Phase == backup.PhaseRestore && first {
					first = false
					fmt.Println("STEP")
					_, _ = io.Copy(io.Discard, os.Stdin)
					select {} // the parent kills us here
				}
			},
		})
		helperFail("restore returned: %v", err)
	default:
		helperFail("unknown %s %q", envBackupHelper, os.Getenv(envBackupHelper))
	}
}

// startBackupChild starts a backup helper child; it is killed at the end
// of the test if it still runs.
func startBackupChild(t *testing.T, helper string, env ...string) (*exec.Cmd, io.WriteCloser, *bufio.Reader) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^TestBackupHelperProcess$", "-test.count=1", "-test.timeout=5m")
	cmd.Env = append(append(os.Environ(), envBackupHelper+"="+helper), env...)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return cmd, stdin, bufio.NewReader(out)
}

// expectLine reads the child's next line and fails unless it is want.
func expectLine(t *testing.T, r *bufio.Reader, want string) {
	t.Helper()
	line, err := r.ReadString('\n')
	if strings.TrimSpace(line) != want {
		t.Fatalf("child said %q (%v), want %s", line, err, want)
	}
}

// TestBackupDest: an existing destination is refused without Force and
// left as it was, replaced with it; the source itself and a directory are
// refused always; a missing source is ErrNotFound.
func TestBackupDest(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	src := filepath.Join(dir, "live.db")
	fillStore(t, src, "a", 30)
	dest := filepath.Join(dir, "copy.db")
	if err := os.WriteFile(dest, []byte("precious"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := backup.Create(ctx, src, dest, nil); !errors.Is(err, backup.ErrDestExists) {
		t.Fatalf("Backup over an existing file: %v, want ErrDestExists", err)
	}
	if b, _ := os.ReadFile(dest); string(b) != "precious" {
		t.Fatalf("the refused destination changed: %q", b)
	}
	var progress []backup.Progress
	res, err := backup.Create(ctx, src, dest, &backup.Options{Force: true, PagesPerStep: 2,
		Progress: func(p backup.Progress) { progress = append(progress, p) }})
	if err != nil {
		t.Fatalf("Backup --force: %v", err)
	}
	// Progress: copy steps with pages growing to the total, then verify.
	if n := len(progress); n < 3 || progress[n-1].Phase != backup.PhaseVerify {
		t.Fatalf("progress %+v: want copy steps, then verify", progress)
	}
	last := progress[len(progress)-2]
	if last.Phase != backup.PhaseCopy || last.Pages != last.TotalPages || last.TotalPages*last.PageSize != res.Bytes {
		t.Errorf("last copy progress %+v; the backup has %d bytes", last, res.Bytes)
	}
	for i := 1; i < len(progress)-1; i++ {
		if progress[i].Pages <= progress[i-1].Pages {
			t.Errorf("progress went from %+v to %+v", progress[i-1], progress[i])
		}
	}
	if res.Events != 30 || res.HeadPosition != 30 || res.Streams != 3 || res.Bytes <= 0 || res.Path != dest {
		t.Errorf("result %+v", res)
	}
	if got := readLog(t, dest); len(got) != 30 {
		t.Errorf("copy holds %d events, want 30", len(got))
	}
	for _, bad := range []string{src, dir} {
		if _, err := backup.Create(ctx, src, bad, &backup.Options{Force: true}); !errors.Is(err, backup.ErrDestExists) {
			t.Errorf("Backup to %s: %v, want ErrDestExists", bad, err)
		}
	}
	if _, err := backup.Create(ctx, filepath.Join(dir, "missing.db"), filepath.Join(dir, "x.db"), nil); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Backup of a missing file: %v, want ErrNotFound", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "missing.db")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Backup of a missing file created it")
	}
	// Nothing is left behind: no temporary file, no -wal or -shm beside
	// the source (read through a connection of its own) or the backup (a
	// rollback-journal file).
	var names []string
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if diff := cmp.Diff([]string{"copy.db", "live.db"}, names); diff != "" {
		t.Errorf("files after the backups (-want +got):\n%s", diff)
	}
}

// TestBackupKilled kills a backup process after its first page: no file
// exists at the destination (the copy is written under a temporary name
// and renamed only once verified), and a new backup then succeeds.
func TestBackupKilled(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	src := filepath.Join(dir, "live.db")
	fillStore(t, src, "k", 200)
	dest := filepath.Join(dir, "copy.db")
	cmd, _, out := startBackupChild(t, "backup", envBackupSrc+"="+src, envBackupDest+"="+dest)
	expectLine(t, out, "STEP")
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if _, err := os.Stat(dest); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("after kill -9 in the middle of the copy, %s exists (%v)", dest, err)
	}
	var partial []string
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.Contains(e.Name(), ".eventlite-backup-") {
			partial = append(partial, e.Name())
		}
	}
	if len(partial) == 0 {
		t.Errorf("no temporary file found: was the child killed in the middle of the copy?")
	}
	t.Logf("the killed backup left %v", partial)
	// The partial copy does not pass as a backup: restoring from it is
	// refused.
	for _, p := range partial {
		target := filepath.Join(dir, "target-"+p+".db")
		if _, err := backup.Restore(ctx, filepath.Join(dir, p), target, nil); err == nil {
			t.Errorf("a restore from the partial copy %s succeeded", p)
		}
	}
	if _, err := backup.Create(ctx, src, dest, nil); err != nil {
		t.Fatalf("backup after the killed one: %v", err)
	}
	if got := readLog(t, dest); len(got) != 200 {
		t.Errorf("copy holds %d events, want 200", len(got))
	}
}
