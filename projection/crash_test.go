package projection_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/eventlite/eventlite/projection"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/storetest"
)

// TestHelperProcess is not a test: TestRunnerKill9 runs the test binary
// again as a projection runner with EVENTLITE_PROJ_HELPER set.
func TestHelperProcess(t *testing.T) {
	if os.Getenv("EVENTLITE_PROJ_HELPER") != "runner" {
		return
	}
	ctx := context.Background()
	s, err := store.Open(ctx, os.Getenv("EVENTLITE_DB"), &store.Options{Synchronous: "NORMAL", PollInterval: 10 * time.Millisecond})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	r, err := projection.NewRunner(s, countingProjection("crashy", nil), &projection.RunnerOptions{BatchSize: 37, LeaseTTL: 2 * time.Second})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := r.Run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(0)
}

// TestRunnerKill9: a runner process is killed with SIGKILL mid-run several
// times and restarted; no event is applied twice and none is skipped.
func TestRunnerKill9(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 2))
	events, kills := 4000, 6
	if testing.Short() {
		events, kills = 400, 2
	}
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "crash.db")
	s := storetest.MustOpenPath(t, path, &store.Options{PollInterval: 10 * time.Millisecond})
	for i := 0; i < events; i += 500 {
		appendN(t, s, fmt.Sprintf("s%d", i), min(500, events-i))
	}
	exe, _ := os.Executable()
	start := func() *exec.Cmd {
		cmd := exec.Command(exe, "-test.run=^TestHelperProcess$")
		cmd.Env = append(os.Environ(), "EVENTLITE_PROJ_HELPER=runner", "EVENTLITE_DB="+path)
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return cmd
	}
	for k := range kills {
		cp, _ := projection.Records(s).Checkpoint(ctx, "crashy")
		target := min(int64(events), cp+1+rng.Int64N(int64(events)/int64(kills+1)))
		cmd := start()
		wctx, cancel := context.WithTimeout(ctx, time.Minute)
		err := waitThroughRestart(wctx, s, "crashy", target)
		cancel()
		if err != nil {
			t.Fatalf("kill %d: %v", k, err)
		}
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		after, _ := projection.Records(s).Checkpoint(ctx, "crashy")
		t.Logf("kill %d at checkpoint >= %d (now %d)", k, target, after)
	}
	cmd := start()
	wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := waitThroughRestart(wctx, s, "crashy", int64(events)); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Process.Signal(os.Interrupt)
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	checkExactlyOnce(t, s, "crashy_applied", int64(events), nil)
}

// waitThroughRestart is WaitFor that allows a runner just started the time
// it needs to take over the lease of the one killed before it: WaitFor
// reports the dead owner once its lease has waited a lease period, which
// a slow start (under -race) may exceed. Before the first runner's first
// transaction the projection is unknown here (ErrUnknownProjection): it
// runs in another process.
func waitThroughRestart(ctx context.Context, s *store.Store, name string, position int64) error {
	for {
		changed := s.Changed()
		err := projection.WaitFor(ctx, s, name, position)
		if !errors.Is(err, projection.ErrOwnerGone) && !errors.Is(err, projection.ErrUnknownProjection) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-changed:
		}
	}
}

// waitForOther is WaitFor on a projection whose runner another process
// starts: it waits for the store's record of it (ErrUnknownProjection
// until the runner's first transaction), then for the position.
func waitForOther(ctx context.Context, s *store.Store, name string, position int64) error {
	for {
		changed := s.Changed()
		err := projection.WaitFor(ctx, s, name, position)
		if !errors.Is(err, projection.ErrUnknownProjection) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-changed:
		}
	}
}
