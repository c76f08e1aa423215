package projection_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/projection"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/storetest"
)

// TestWaitForStoppedReturnsAtOnce: a projection halted on a quarantined
// event cannot reach a later position without a person, so WaitFor says
// so at once, naming the event, instead of running to its deadline.
func TestWaitForStoppedReturnsAtOnce(t *testing.T) {
	ctx := context.Background()
	s := storetest.MustOpen(t, nil)
	res := appendN(t, s, "s", 6)
	bad := res.Events[2]
	p := countingProjection("halts", func(e envelope.Event) error {
		if e.ID == bad.ID {
			return errors.New("boom")
		}
		return nil
	})
	r, err := projection.NewRunner(s, p, &projection.RunnerOptions{MaxAttempts: 2})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Run(ctx); !errors.Is(err, projection.ErrStopped) {
		t.Fatalf("Run = %v, want ErrStopped", err)
	}
	// A deadline far beyond the test: WaitFor must not need it.
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	err = projection.WaitFor(wctx, s, "halts", res.LastPosition())
	var se *projection.StuckError
	if !errors.As(err, &se) || !errors.Is(err, projection.ErrStopped) || errors.Is(err, projection.ErrOwnerGone) {
		t.Fatalf("WaitFor = %v, want a *StuckError matching ErrStopped", err)
	}
	if wctx.Err() != nil {
		t.Fatalf("WaitFor waited for its deadline: %v", err)
	}
	if se.Stopped == nil || se.Stopped.EventID != bad.ID || se.Stopped.Position != bad.Position || se.Checkpoint != bad.Position-1 {
		t.Fatalf("StuckError %+v (stopped %+v), want event %s at %d", se, se.Stopped, bad.ID, bad.Position)
	}
	for _, want := range []string{bad.ID, "boom", "eventlite quarantine skip halts " + bad.ID} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("message %q lacks %q", err, want)
		}
	}
	// Below the stop, WaitFor still just returns.
	if err := projection.WaitFor(wctx, s, "halts", bad.Position-1); err != nil {
		t.Fatal(err)
	}
}

// TestWaitForOrphanedLease: the runner holding the lease is a process on
// this host that was killed. Once its lease expired and no runner took it
// over within one lease period, WaitFor returns ErrOwnerGone, and
// projections and doctor show the projection as orphaned; a new runner
// takes over and WaitFor succeeds again.
func TestWaitForOrphanedLease(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "orphan.db")
	s := storetest.MustOpenPath(t, path, &store.Options{PollInterval: 10 * time.Millisecond})
	res := appendN(t, s, "a", 20)
	exe, _ := os.Executable()
	cmd := exec.Command(exe, "-test.run=^TestHelperProcess$")
	cmd.Env = append(os.Environ(), "EVENTLITE_PROJ_HELPER=runner", "EVENTLITE_DB="+path)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	killed := false
	defer func() {
		if !killed {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	}()
	wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	// The child runs the projection: a live owner is waited for.
	if err := waitForOther(wctx, s, "crashy", res.LastPosition()); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	killed = true
	more := appendN(t, s, "b", 5)
	err := projection.WaitFor(wctx, s, "crashy", more.LastPosition())
	var se *projection.StuckError
	if !errors.As(err, &se) || !errors.Is(err, projection.ErrOwnerGone) || errors.Is(err, projection.ErrStopped) {
		t.Fatalf("WaitFor = %v, want a *StuckError matching ErrOwnerGone", err)
	}
	if !strings.Contains(se.Owner, ":"+strconv.Itoa(cmd.Process.Pid)+":") || se.ExpiredFor < 400*time.Millisecond {
		t.Fatalf("StuckError %+v: want the child's owner (pid %d), expired for at least one lease period (400ms)", se, cmd.Process.Pid)
	}
	st, err := projection.StatsFor(ctx, s, "crashy")
	if err != nil || st.Status != projection.StatusOrphaned {
		t.Fatalf("stats %+v (%v), want status orphaned", st, err)
	}
	findings, err := s.Diagnose(ctx, store.DiagnoseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !hasFinding(findings, "projections_orphaned", "crashy") {
		t.Fatalf("doctor findings %+v lack projections_orphaned for crashy", findings)
	}
	// A new runner takes the lease over: no longer orphaned.
	rctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	r, err := projection.NewRunner(s, countingProjection("crashy", nil), &projection.RunnerOptions{LeaseTTL: 400 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	go func() { done <- r.Run(rctx) }()
	// Until the runner has taken the lease, WaitFor rightly still reports
	// the gone owner.
	if err := waitThroughRestart(wctx, s, "crashy", more.LastPosition()); err != nil {
		t.Fatal(err)
	}
	if st, _ := projection.StatsFor(ctx, s, "crashy"); st.Status != projection.StatusRunning {
		t.Errorf("status %s after a runner took over, want running", st.Status)
	}
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	checkExactlyOnce(t, s, "crashy_applied", more.LastPosition(), nil)
}

func hasFinding(fs []store.Finding, kind, id string) bool {
	for _, f := range fs {
		if f.Kind != kind {
			continue
		}
		for _, x := range f.IDs {
			if strings.HasPrefix(x, id) {
				return true
			}
		}
	}
	return false
}

// TestOwnerGone: only an owner in the default form on this host whose
// process does not run counts as gone.
func TestOwnerGone(t *testing.T) {
	host, _ := os.Hostname()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Skip("no 'true' command to get a dead pid:", err)
	}
	dead := cmd.Process.Pid
	for owner, want := range map[string]bool{
		fmt.Sprintf("%s:%d:ABC", host, dead):         true,
		fmt.Sprintf("%s:%d:ABC", host, os.Getpid()):  false,
		fmt.Sprintf("%s:%d:ABC", host, os.Getppid()): false,
		fmt.Sprintf("elsewhere:%d:ABC", dead):        false,
		"replayer":                                   false,
		fmt.Sprintf("%s:notapid:ABC", host):          false,
	} {
		if got := store.OwnerGone(owner); got != want {
			t.Errorf("OwnerGone(%q) = %v, want %v", owner, got, want)
		}
	}
}
