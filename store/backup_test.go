package store_test

import (
	"bufio"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/store"
)

// The backup tests' own child processes (the append children come from
// process_test.go): this test binary re-executed with
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
		_, err := store.Backup(context.Background(), os.Getenv(envBackupSrc), os.Getenv(envBackupDest), &store.BackupOptions{
			PagesPerStep: 1,
			Progress: func(p store.BackupProgress) {
				if p.Phase == store.PhaseCopy && first {
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
		_, err := store.Restore(context.Background(), os.Getenv(envBackupSrc), os.Getenv(envBackupDest), &store.RestoreOptions{
			Force:        true,
			PagesPerStep: 1,
			Progress: func(p store.BackupProgress) {
				if p.Phase == store.PhaseRestore && first {
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

// fillStore creates a store at path with n events in streams of up to 10
// and closes it. Event ids start with prefix.
func fillStore(t testing.TB, path, prefix string, n int) {
	t.Helper()
	ctx := context.Background()
	s, err := store.Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i += 10 {
		evs := make([]envelope.Event, min(10, n-i))
		for j := range evs {
			evs[j] = envelope.Event{ID: fmt.Sprintf("%s-%d", prefix, i+j), Source: "/test/backup", Type: "backup.filled",
				Data: fmt.Appendf(nil, `{"i":%d,"pad":"%s"}`, i+j, strings.Repeat("x", 200))}
		}
		if _, err := s.Append(ctx, "default", fmt.Sprintf("%s-stream-%d", prefix, i/10), store.NoStream, evs...); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// logEvent is an event as a file holds it.
type logEvent struct {
	Stream            string
	Position, Version int64
}

// readLog opens the store at path and returns every event by
// tenant/id, after checking the store's invariants.
func readLog(t *testing.T, path string) map[string]logEvent {
	t.Helper()
	ctx := context.Background()
	s, err := store.Open(ctx, path, nil)
	if err != nil {
		t.Fatalf("open %s: %v", path, err)
	}
	defer s.Close()
	if err := s.CheckInvariants(ctx); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	out := map[string]logEvent{}
	for e, err := range s.ReadAll(ctx, store.ReadAllOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		out[e.Tenant+"/"+e.ID] = logEvent{Stream: e.Stream, Position: e.Position, Version: e.StreamVersion}
	}
	return out
}

// ackedAppend is one acknowledged append: its events as the store
// placed them.
type ackedAppend struct {
	keys   []string // tenant/id
	events []logEvent
}

// appendLedger collects acknowledged appends from goroutines and
// children; changed is signalled (without blocking) at every one.
type appendLedger struct {
	mu      sync.Mutex
	appends []ackedAppend
	byChild map[int]int
	local   int
	changed chan struct{}
}

func (l *appendLedger) add(a ackedAppend, child int) {
	l.mu.Lock()
	l.appends = append(l.appends, a)
	if child >= 0 {
		l.byChild[child]++
	} else {
		l.local++
	}
	l.mu.Unlock()
	select {
	case l.changed <- struct{}{}:
	default:
	}
}

// waitFor waits until cond holds over the ledger (checked at every ack).
func (l *appendLedger) waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	timeout := time.After(2 * time.Minute)
	for {
		l.mu.Lock()
		ok := cond()
		l.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-l.changed:
		case <-timeout:
			t.Fatalf("no progress for 2 minutes waiting for %s", what)
		}
	}
}

func (l *appendLedger) snapshot() []ackedAppend {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]ackedAppend(nil), l.appends...)
}

// TestBackupUnderLoad backs up a store while 8 goroutines of this process
// and 2 other processes append to it, batches of several events among
// them. The copy must open, pass CheckInvariants and Diagnose, hold every
// append acknowledged before Backup was called where it was acknowledged,
// hold no part of a batch without the rest, and match what Backup reported.
func TestBackupUnderLoad(t *testing.T) {
	ctx := context.Background()
	seed := testSeed(t)
	prefill := 3000
	if testing.Short() {
		prefill = 400
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "live.db")
	dest := filepath.Join(dir, "backup", "copy.db")
	if err := os.Mkdir(filepath.Dir(dest), 0o755); err != nil {
		t.Fatal(err)
	}
	fillStore(t, path, "pre", prefill)
	s, err := store.Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	l := &appendLedger{byChild: map[int]int{}, changed: make(chan struct{}, 1)}
	// Two children append from two goroutines each, until they are killed.
	const children = 2
	cs := make([]*procChild, children)
	for i := range cs {
		cs[i] = startProcChild(t, "append", envDB+"="+path, envChild+"="+strconv.Itoa(i),
			envAppends+"=1000000", envChildSeed+"="+strconv.FormatUint(seed+uint64(i), 10))
	}
	var readers sync.WaitGroup
	for i, c := range cs {
		if line, ok := procNextLine(t, c); !ok || line != "READY" {
			t.Fatalf("child %d: first line %q, want READY; stderr:\n%s", i, line, c.stop())
		}
		if _, err := io.WriteString(c.stdin, "go\n"); err != nil {
			t.Fatal(err)
		}
		readers.Go(func() {
			for line := range c.lines {
				kind, m := procParse(t, line)
				if kind != "ACK" {
					continue
				}
				var a ackedAppend
				for _, e := range m.Events {
					a.keys = append(a.keys, m.Tenant+"/"+e.ID)
					a.events = append(a.events, logEvent{Stream: m.Stream, Position: e.Position, Version: e.Version})
				}
				l.add(a, i)
			}
		})
	}

	// Eight goroutines append batches of 1-4 events to their own streams.
	const workers = 8
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var failed atomic.Value
	for w := range workers {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(seed, uint64(100+w)))
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				stream := fmt.Sprintf("local-%d-%d", w, i%5)
				evs := make([]envelope.Event, 1+r.IntN(4))
				for j := range evs {
					evs[j] = envelope.Event{ID: fmt.Sprintf("l%d-%d-%d", w, i, j), Source: "/test/backup", Type: "backup.appended",
						Data: fmt.Appendf(nil, `{"w":%d,"i":%d,"j":%d}`, w, i, j)}
				}
				res, err := s.Append(ctx, "default", stream, store.Any, evs...)
				if err != nil {
					failed.Store(err)
					return
				}
				var a ackedAppend
				for _, e := range res.Events {
					a.keys = append(a.keys, "default/"+e.ID)
					a.events = append(a.events, logEvent{Stream: stream, Position: e.Position, Version: e.StreamVersion})
				}
				l.add(a, -1)
			}
		})
	}
	stopAll := func() {
		select {
		case <-stop:
		default:
			close(stop)
		}
		wg.Wait()
		for _, c := range cs {
			_ = c.cmd.Process.Kill()
		}
		readers.Wait()
		for _, c := range cs {
			_ = c.wait()
		}
	}
	defer stopAll()

	l.waitFor(t, "appends from every appender", func() bool {
		return l.local >= 4*workers && l.byChild[0] >= 3 && l.byChild[1] >= 3
	})
	before := l.snapshot()
	var during struct{ local, child0, child1 int }
	first := true
	res, err := store.Backup(ctx, path, dest, &store.BackupOptions{
		PagesPerStep: 4,
		Progress: func(p store.BackupProgress) {
			if p.Phase != store.PhaseCopy || !first {
				return
			}
			first = false
			// The copy has begun: let every appender commit more before it
			// goes on, so the backup really runs beside them.
			l.mu.Lock()
			during.local, during.child0, during.child1 = l.local, l.byChild[0], l.byChild[1]
			l.mu.Unlock()
			l.waitFor(t, "appends during the backup", func() bool {
				return l.local > during.local+workers && l.byChild[0] > during.child0 && l.byChild[1] > during.child1
			})
		},
	})
	if err != nil {
		t.Fatalf("Backup: %v", err)
	}
	stopAll()
	if err, _ := failed.Load().(error); err != nil {
		t.Fatalf("an appender failed: %v", err)
	}
	all := l.snapshot()
	t.Logf("backup of %d events (head %d, %d bytes) in %v; %d appends acknowledged before it began, %d by the end",
		res.Events, res.HeadPosition, res.Bytes, res.Elapsed.Round(time.Millisecond), len(before), len(all))

	// The copy opens and passes doctor.
	cp, err := store.Open(ctx, dest, nil)
	if err != nil {
		t.Fatalf("open the copy: %v", err)
	}
	if err := cp.CheckInvariants(ctx); err != nil {
		t.Errorf("copy: %v", err)
	}
	findings, err := cp.Diagnose(ctx, store.DiagnoseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range findings {
		if f.Severity == store.SeverityProblem {
			t.Errorf("doctor finds a problem in the copy: %+v", f)
		}
	}
	if h, err := cp.Head(ctx); err != nil || h != res.HeadPosition {
		t.Errorf("copy head %d (%v), Backup reported %d", h, err, res.HeadPosition)
	}
	if err := cp.Close(); err != nil {
		t.Fatal(err)
	}
	got := readLog(t, dest)
	if int64(len(got)) != res.Events {
		t.Errorf("the copy holds %d events, Backup reported %d", len(got), res.Events)
	}
	if want := int64(prefill); res.Events < want+int64(len(before)) {
		t.Errorf("Backup reported %d events, fewer than the %d filled plus %d appends acknowledged before", res.Events, want, len(before))
	}
	for _, a := range before {
		for i, k := range a.keys {
			if e, ok := got[k]; !ok || e != a.events[i] {
				t.Errorf("append acknowledged before the backup: %s at %+v; the copy has %+v (present %v)", k, a.events[i], e, ok)
			}
		}
	}
	whole, none := 0, 0
	for _, a := range all {
		present := 0
		for i, k := range a.keys {
			if e, ok := got[k]; ok {
				present++
				if e != a.events[i] {
					t.Errorf("%s acknowledged at %+v, the copy has %+v", k, a.events[i], e)
				}
			}
		}
		switch present {
		case len(a.keys):
			whole++
		case 0:
			none++
		default:
			t.Errorf("the copy holds %d of the %d events of one append (%v): a batch is all or nothing", present, len(a.keys), a.keys)
		}
	}
	// Every event the goroutines appended is explained by an acknowledged
	// append (they all returned before the check).
	acked := map[string]bool{}
	for _, a := range all {
		for _, k := range a.keys {
			acked[k] = true
		}
	}
	for k := range got {
		if strings.HasPrefix(k, "default/l") && !acked[k] {
			t.Errorf("the copy holds %s, which no append acknowledged", k)
		}
	}
	t.Logf("appends in the copy: %d whole, %d after the snapshot", whole, none)
	if none == 0 {
		t.Errorf("no append was acknowledged after the snapshot: the backup did not run beside the appenders")
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
	if _, err := store.Backup(ctx, src, dest, nil); !errors.Is(err, store.ErrDestExists) {
		t.Fatalf("Backup over an existing file: %v, want ErrDestExists", err)
	}
	if b, _ := os.ReadFile(dest); string(b) != "precious" {
		t.Fatalf("the refused destination changed: %q", b)
	}
	var progress []store.BackupProgress
	res, err := store.Backup(ctx, src, dest, &store.BackupOptions{Force: true, PagesPerStep: 2,
		Progress: func(p store.BackupProgress) { progress = append(progress, p) }})
	if err != nil {
		t.Fatalf("Backup --force: %v", err)
	}
	// Progress: copy steps with pages growing to the total, then verify.
	if n := len(progress); n < 3 || progress[n-1].Phase != store.PhaseVerify {
		t.Fatalf("progress %+v: want copy steps, then verify", progress)
	}
	last := progress[len(progress)-2]
	if last.Phase != store.PhaseCopy || last.Pages != last.TotalPages || last.TotalPages*last.PageSize != res.Bytes {
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
		if _, err := store.Backup(ctx, src, bad, &store.BackupOptions{Force: true}); !errors.Is(err, store.ErrDestExists) {
			t.Errorf("Backup to %s: %v, want ErrDestExists", bad, err)
		}
	}
	if _, err := store.Backup(ctx, filepath.Join(dir, "missing.db"), filepath.Join(dir, "x.db"), nil); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Backup of a missing file: %v, want ErrNotFound", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "missing.db")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Backup of a missing file created it")
	}
	// No temporary file is left behind.
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".tmp") {
			t.Errorf("left behind: %s", e.Name())
		}
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
		if _, err := store.Restore(ctx, filepath.Join(dir, p), target, nil); err == nil {
			t.Errorf("a restore from the partial copy %s succeeded", p)
		}
	}
	if _, err := store.Backup(ctx, src, dest, nil); err != nil {
		t.Fatalf("backup after the killed one: %v", err)
	}
	if got := readLog(t, dest); len(got) != 200 {
		t.Errorf("copy holds %d events, want 200", len(got))
	}
}

// TestRestoreKilled kills a restore process after it copied the first page
// into the target, under the target's write lock: the target, reopened,
// holds its old events, all of them and nothing else.
func TestRestoreKilled(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "live.db")
	fillStore(t, src, "new", 300)
	backup := filepath.Join(dir, "backup.db")
	if _, err := store.Backup(context.Background(), src, backup, nil); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(dir, "target.db")
	fillStore(t, target, "old", 40)
	want := readLog(t, target)
	cmd, _, out := startBackupChild(t, "restore", envBackupSrc+"="+backup, envBackupDest+"="+target)
	expectLine(t, out, "STEP")
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if diff := cmp.Diff(want, readLog(t, target)); diff != "" {
		t.Fatalf("after kill -9 in the middle of a restore the target changed (-before +after):\n%s", diff)
	}
}

// fileBytes returns path's bytes (or "<missing>").
func fileBytes(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return "<missing>"
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestRestore restores a backup over targets in every state.
func TestRestore(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	// The backup: 20 events.
	live := filepath.Join(dir, "live.db")
	fillStore(t, live, "b", 20)
	backup := filepath.Join(dir, "backup.db")
	if _, err := store.Backup(ctx, live, backup, nil); err != nil {
		t.Fatal(err)
	}
	wantBackup := readLog(t, backup)

	// newTarget makes a directory with a target of n events (n < 0: no
	// file; n == 0: an empty store).
	newTarget := func(t *testing.T, n int) string {
		target := filepath.Join(t.TempDir(), "target.db")
		switch {
		case n > 0:
			fillStore(t, target, "old", n)
		case n == 0:
			fillStore(t, target, "old", 0)
		}
		return target
	}
	// restored checks that target now holds the backup and that a new
	// append gets a position above floor.
	restored := func(t *testing.T, target string, res store.RestoreResult, floor int64) {
		t.Helper()
		if diff := cmp.Diff(wantBackup, readLog(t, target)); diff != "" {
			t.Fatalf("restored log (-backup +target):\n%s", diff)
		}
		if res.Events != 20 || res.HeadPosition != 20 || res.Sequence < floor {
			t.Errorf("result %+v, want 20 events, head 20, sequence >= %d", res, floor)
		}
		s, err := store.Open(ctx, target, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		r, err := s.Append(ctx, "default", "after-restore", store.NoStream, envelope.Event{Source: "/test", Type: "t.after"})
		if err != nil {
			t.Fatal(err)
		}
		if p := r.LastPosition(); p <= floor || p <= 20 {
			t.Errorf("the first append after the restore got position %d; the old file had handed out up to %d", p, floor)
		}
		// The positions left unused are a known hole, not damage.
		if err := s.CheckInvariants(ctx); err != nil {
			t.Errorf("after the restore and an append: %v", err)
		}
		findings, err := s.Diagnose(ctx, store.DiagnoseOptions{})
		if err != nil {
			t.Fatal(err)
		}
		restoreHole := false
		for _, f := range findings {
			if f.Severity == store.SeverityProblem {
				t.Errorf("doctor finds a problem after the restore: %+v", f)
			}
			restoreHole = restoreHole || f.Kind == "position_holes_restore"
		}
		if restoreHole != (floor > 20) {
			t.Errorf("doctor reports the restore's hole: %v; want %v (%+v)", restoreHole, floor > 20, findings)
		}
	}

	t.Run("no target", func(t *testing.T) {
		target := newTarget(t, -1)
		res, err := store.Restore(ctx, backup, target, nil)
		if err != nil {
			t.Fatal(err)
		}
		restored(t, target, res, 0)
	})
	t.Run("min sequence", func(t *testing.T) {
		target := newTarget(t, -1)
		res, err := store.Restore(ctx, backup, target, &store.RestoreOptions{MinSequence: 1000})
		if err != nil {
			t.Fatal(err)
		}
		restored(t, target, res, 1000)
	})
	t.Run("empty store", func(t *testing.T) {
		target := newTarget(t, 0)
		res, err := store.Restore(ctx, backup, target, nil)
		if err != nil {
			t.Fatal(err)
		}
		restored(t, target, res, 0)
	})
	t.Run("target with events", func(t *testing.T) {
		target := newTarget(t, 50)
		before := fileBytes(t, target)
		_, err := store.Restore(ctx, backup, target, nil)
		var te *store.TargetNotEmptyError
		if !errors.Is(err, store.ErrTargetNotEmpty) || !errors.As(err, &te) || te.Events != 50 {
			t.Fatalf("Restore over 50 events: %v, want a *TargetNotEmptyError with 50 events", err)
		}
		if fileBytes(t, target) != before {
			t.Fatalf("the refused target changed")
		}
		res, err := store.Restore(ctx, backup, target, &store.RestoreOptions{Force: true})
		if err != nil {
			t.Fatalf("Restore with Force: %v", err)
		}
		if res.PreviousEvents != 50 || res.PreviousSequence != 50 {
			t.Errorf("previous %d events, sequence %d; want 50, 50", res.PreviousEvents, res.PreviousSequence)
		}
		restored(t, target, res, 50)
	})
	t.Run("target open in another store", func(t *testing.T) {
		// A process that has the target open sees the restored content.
		target := newTarget(t, 30)
		s, err := store.Open(ctx, target, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if _, err := store.Restore(ctx, backup, target, &store.RestoreOptions{Force: true}); err != nil {
			t.Fatal(err)
		}
		if h, err := s.Head(ctx); err != nil || h != 20 {
			t.Errorf("the open store sees head %d (%v), want 20", h, err)
		}
		r, err := s.Append(ctx, "default", "open-after", store.NoStream, envelope.Event{Source: "/test", Type: "t.after"})
		if err != nil {
			t.Fatal(err)
		}
		if r.LastPosition() <= 30 {
			t.Errorf("an append through the store that was open got position %d, at or below the old head 30", r.LastPosition())
		}
		if err := s.CheckInvariants(ctx); err != nil {
			t.Error(err)
		}
	})

	// Sources that fail their checks; the target is left byte for byte.
	foreign := filepath.Join(dir, "foreign.db")
	rawExec(t, foreign, `CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT)`, `INSERT INTO customers (name) VALUES ('x')`)
	text := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(text, []byte(strings.Repeat("not a database\n", 500)), 0o644); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty.db")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	corrupt := filepath.Join(dir, "corrupt.db")
	b := []byte(fileBytes(t, backup))
	for i := 4096 * 2; i < len(b)-4096; i++ {
		b[i] = byte(i * 7)
	}
	if err := os.WriteFile(corrupt, b, 0o644); err != nil {
		t.Fatal(err)
	}
	truncated := filepath.Join(dir, "truncated.db")
	if err := os.WriteFile(truncated, []byte(fileBytes(t, backup))[:4096*3], 0o644); err != nil {
		t.Fatal(err)
	}
	broken := filepath.Join(dir, "broken.db") // valid SQLite, broken invariants
	fillStore(t, broken, "x", 20)
	rawExec(t, broken, `DELETE FROM outbox WHERE position = 5`)
	for _, tc := range []struct {
		name, src string
		want      error
	}{
		{"foreign database", foreign, store.ErrNotEventlite},
		{"text file", text, store.ErrNotEventlite},
		{"empty file", empty, store.ErrNotEventlite},
		{"corrupt pages", corrupt, store.ErrBackupInvalid},
		{"truncated", truncated, store.ErrBackupInvalid},
		{"broken invariants", broken, store.ErrBackupInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			target := newTarget(t, 7)
			before := dirDigest(t, filepath.Dir(target))
			_, err := store.Restore(ctx, tc.src, target, &store.RestoreOptions{Force: true})
			if !errors.Is(err, tc.want) {
				t.Fatalf("Restore from %s: %v, want %v", tc.name, err, tc.want)
			}
			t.Logf("refused: %v", err)
			if diff := cmp.Diff(before, dirDigest(t, filepath.Dir(target))); diff != "" {
				t.Fatalf("the target changed (-before +after):\n%s", diff)
			}
		})
	}

	t.Run("target locked by another process", func(t *testing.T) {
		target := newTarget(t, 7)
		before := fileBytes(t, target)
		_, stdin, out := startBackupChild(t, "lock", envDB+"="+target)
		expectLine(t, out, "LOCKED")
		_, err := store.Restore(ctx, backup, target, &store.RestoreOptions{Force: true, BusyTimeout: 200 * time.Millisecond})
		if !errors.Is(err, store.ErrBusy) {
			t.Fatalf("Restore while another process holds the write lock: %v, want ErrBusy", err)
		}
		t.Logf("refused: %v", err)
		_ = stdin.Close()
		if _, err := out.ReadString('\n'); err != io.EOF {
			t.Fatalf("lock child: %v", err)
		}
		if fileBytes(t, target) != before {
			t.Errorf("the target file changed")
		}
		if got := readLog(t, target); len(got) != 7 {
			t.Errorf("the target holds %d events, want its 7", len(got))
		}
	})
}

// TestRestoreOlderSchema restores a backup of a schema-4 file (built from
// the first four migration files, without position_holes): it is restored
// as it is, and the next Open migrates it like any file.
func TestRestoreOlderSchema(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	old := filepath.Join(dir, "old.db")
	var stmts []string
	for _, name := range []string{"0001_event_log.sql", "0002_operations_snapshots.sql", "0003_leases_checkpoints.sql", "0004_outbox_relay.sql"} {
		b, err := os.ReadFile(filepath.Join("migrations", name))
		if err != nil {
			t.Fatal(err)
		}
		stmts = append(stmts, string(b))
	}
	stmts = append(stmts, "PRAGMA user_version = 4", "PRAGMA journal_mode = WAL")
	for i := 1; i <= 5; i++ {
		stmts = append(stmts,
			fmt.Sprintf(`INSERT INTO events (tenant, stream_id, version, event_id, type, source, time, content_type, data, recorded_at)
				VALUES ('default', 'old-1', %d, 'old-%d', 'old.happened', '/old', 1, 'application/json', '{}', 1)`, i, i),
			fmt.Sprintf(`INSERT INTO outbox (position) VALUES (%d)`, i))
	}
	stmts = append(stmts, `INSERT INTO streams (tenant, stream_id, version, created_at, updated_at) VALUES ('default', 'old-1', 5, 1, 1)`)
	rawExec(t, old, stmts...)
	backup := filepath.Join(dir, "old-backup.db")
	if _, err := store.Backup(ctx, old, backup, nil); err != nil {
		t.Fatalf("backup of a schema-4 file: %v", err)
	}
	if v := rawQueryString(t, old, "PRAGMA user_version"); v != "4" {
		t.Fatalf("the backup changed its source's schema to %s", v)
	}
	target := filepath.Join(dir, "target.db")
	res, err := store.Restore(ctx, backup, target, nil)
	if err != nil {
		t.Fatalf("restore of a schema-4 backup: %v", err)
	}
	if res.SchemaVersion != 4 || res.Events != 5 {
		t.Errorf("result %+v, want schema 4, 5 events", res)
	}
	if v := rawQueryString(t, target, "PRAGMA user_version"); v != "4" {
		t.Fatalf("restored schema %s, want 4 (as it was)", v)
	}
	got := readLog(t, target) // Open migrates it
	if len(got) != 5 || got["default/old-5"].Version != 5 {
		t.Errorf("restored log %v", got)
	}
	if v := rawQueryString(t, target, "PRAGMA user_version"); v != strconv.Itoa(store.SchemaVersion()) {
		t.Errorf("after Open: schema %s, want %d", v, store.SchemaVersion())
	}
}
