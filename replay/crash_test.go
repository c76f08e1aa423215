package replay_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/eventlite/eventlite/projection"
	"github.com/eventlite/eventlite/replay"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/storetest"
)

// crashLeaseTTL is the rebuild lease's TTL in the crash test: a killed
// replay's lease outlives it by this much.
const crashLeaseTTL = 300 * time.Millisecond

// rebuildWhenFree runs a rebuild, waiting out a lease a killed replay left
// (it expires after its TTL; the error says when).
func rebuildWhenFree(ctx context.Context, s *store.Store, p projection.Projection, opts *replay.Options) (replay.Result, error) {
	for {
		res, err := replay.Rebuild(ctx, s, p, opts)
		var held *store.LeaseHeldError
		if !errors.As(err, &held) {
			return res, err
		}
		select {
		case <-ctx.Done():
			return res, ctx.Err()
		case <-time.After(held.ExpiresIn + time.Millisecond):
		}
	}
}

// TestReplayHelperProcess is not a test: TestRebuildKill9 runs the test
// binary again as a replay with EVENTLITE_REPLAY_HELPER set.
func TestReplayHelperProcess(t *testing.T) {
	if os.Getenv("EVENTLITE_REPLAY_HELPER") != "rebuild" {
		return
	}
	ctx := context.Background()
	s, err := store.Open(ctx, os.Getenv("EVENTLITE_DB"), &store.Options{Synchronous: "NORMAL"})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	batch, _ := strconv.Atoi(os.Getenv("EVENTLITE_BATCH"))
	if _, err := rebuildWhenFree(ctx, s, ledger("ledger", nil, nil), &replay.Options{BatchSize: batch, LeaseTTL: crashLeaseTTL}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	_ = s.Close()
	os.Exit(0)
}

// TestRebuildKill9: a replay process is killed with SIGKILL at random
// points of its rebuild, again and again, with events appended between
// the runs. After every kill the live read model and its checkpoint are
// byte for byte what they were (or, if the kill came after the swap
// committed, the whole rebuilt model is in); a final run resumes and
// finishes, and the read model is then exactly the fold of the log.
func TestRebuildKill9(t *testing.T) {
	rng := newSeed(t)
	events, kills := 3000, 8
	if testing.Short() {
		events, kills = 800, 3
	}
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "crash.db")
	s := storetest.MustOpenPath(t, path, &store.Options{PollInterval: 2 * time.Millisecond})
	appendRandom(t, s, rng, events)
	p := ledger("ledger", nil, nil)
	catchUp(t, s, p)
	live := snapshot(t, s, p)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	swapped := false
	for k := 0; k < kills && !swapped; k++ {
		cmd := exec.Command(exe, "-test.run=^TestReplayHelperProcess$")
		cmd.Env = append(os.Environ(), "EVENTLITE_REPLAY_HELPER=rebuild", "EVENTLITE_DB="+path, "EVENTLITE_BATCH="+strconv.Itoa(1+rng.IntN(4)))
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan struct{})
		go func() {
			_ = cmd.Wait()
			close(exited)
		}()
		// Kill at once, or once the shadow passed a random position ahead
		// of where it is.
		target := int64(0)
		if rng.IntN(5) > 0 {
			head, _ := s.Head(ctx)
			row, _, _ := projection.Rebuilds(s).Load(ctx, "ledger")
			target = row.Checkpoint + 1 + rng.Int64N(max(1, (head-row.Checkpoint)*3/4))
		}
		at, err := waitShadow(ctx, s, target, exited)
		if err != nil {
			t.Fatalf("kill %d: %v", k, err)
		}
		_ = cmd.Process.Kill()
		<-exited
		row, ok, err := projection.Rebuilds(s).Load(ctx, "ledger")
		if err != nil {
			t.Fatal(err)
		}
		now := snapshot(t, s, p)
		if !ok && now.Checkpoint != live.Checkpoint {
			t.Logf("kill %d came after the swap (checkpoint %d)", k, now.Checkpoint)
			swapped = true
			break
		}
		t.Logf("kill %d with the shadow at %d (waited for %d): rebuild row %+v", k, at, target, row)
		if diff := cmp.Diff(live, now); diff != "" {
			t.Fatalf("kill %d changed the live read model (-before +after)\n%s", k, diff)
		}
		if err := s.CheckInvariants(ctx); err != nil {
			t.Fatalf("kill %d: %v", k, err)
		}
		appendRandom(t, s, rng, 1+rng.IntN(20))
	}
	if !swapped {
		row, hadRow, _ := projection.Rebuilds(s).Load(ctx, "ledger")
		res, err := rebuildWhenFree(ctx, s, p, &replay.Options{LeaseTTL: crashLeaseTTL})
		if err != nil {
			t.Fatal(err)
		}
		if hadRow && (!res.Resumed || res.ResumedFrom != row.Checkpoint) {
			t.Errorf("the final run %+v did not resume from the shadow at %d", res, row.Checkpoint)
		}
		t.Logf("final run: %+v", res)
	}
	checkLedgerIsFold(t, s, "ledger", nil)
	if sh := shadowTables(t, s); len(sh) != 0 {
		t.Errorf("shadow tables left: %q", sh)
	}
}

// waitShadow waits, on commit notifications, until the rebuild row's
// checkpoint reaches target (or the rebuild row is gone after having
// been there, or the process exited), and returns the checkpoint seen.
func waitShadow(ctx context.Context, s *store.Store, target int64, exited <-chan struct{}) (int64, error) {
	if target == 0 {
		return 0, nil
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	seen := false
	for {
		changed := s.Changed()
		row, ok, err := projection.Rebuilds(s).Load(ctx, "ledger")
		if err != nil {
			return 0, err
		}
		seen = seen || ok
		if ok && row.Checkpoint >= target || seen && !ok {
			return row.Checkpoint, nil
		}
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("the shadow never reached %d: %w", target, ctx.Err())
		case <-exited:
			return row.Checkpoint, nil // finished (or failed: the checks say which)
		case <-changed:
		}
	}
}
