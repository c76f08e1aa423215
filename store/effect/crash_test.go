package effect_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/effect"
	"github.com/eventlite/eventlite/store/storetest"
)

const envEffectChild = "EVENTLITE_EFFECT_CHILD" // what TestEffectCrashChild does

// effectCrashRun is the effect the crash test's processes share.
func effectCrashRun() effect.Intent {
	return effect.Intent{Tenant: "default", Key: "delete:acct-1", Kind: effect.Irreversible, Resource: "account/acct-1",
		Summary: "delete account acct-1", RequestedBy: "gdpr-worker", NeedsApproval: true, Args: map[string]string{"account": "acct-1"}}
}

// TestEffectCrashChild is not a test: it is the body of the crash test's
// child processes. "request" records the effect and waits; "resume" runs
// ResumeApproved with a call that writes a line to the marker file, says
// CALLING and never returns. Either is killed with SIGKILL.
func TestEffectCrashChild(t *testing.T) {
	mode := os.Getenv(envEffectChild)
	if mode == "" {
		return
	}
	fail := func(err error) {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	ctx := context.Background()
	s, err := store.Open(ctx, os.Getenv("EVENTLITE_DB"), nil)
	if err != nil {
		fail(err)
	}
	switch mode {
	case "request":
		e, err := effect.For(s).Do(ctx, effectCrashRun(), func(context.Context, json.RawMessage) (string, error) {
			fail(errors.New("ran before approval"))
			return "", nil
		})
		if !errors.Is(err, effect.ErrAwaitingApproval) {
			fail(err)
		}
		fmt.Println("AWAITING " + e.ArgsHash())
	case "resume":
		_, err := effect.For(s).ResumeApproved(ctx, "default", func(ctx context.Context, e effect.Effect, args json.RawMessage) (string, error) {
			f, err := os.OpenFile(os.Getenv("EVENTLITE_MARKER"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
			if err != nil {
				fail(err)
			}
			if _, err := fmt.Fprintf(f, "%s %s\n", e.Key, args); err != nil {
				fail(err)
			}
			if err := f.Close(); err != nil {
				fail(err)
			}
			fmt.Println("CALLING")
			select {} // the process dies mid-call
		})
		fail(fmt.Errorf("resume returned: %v", err))
	}
	_, _ = io.Copy(io.Discard, os.Stdin) // wait to be killed
	os.Exit(0)
}

// startEffectChild starts this test binary as a crash child and returns
// its process and its first line of output.
func startEffectChild(t *testing.T, mode string, env ...string) (*exec.Cmd, string) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^TestEffectCrashChild$", "-test.count=1", "-test.timeout=5m")
	cmd.Env = append(append(os.Environ(), envEffectChild+"="+mode), env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if _, err := cmd.StdinPipe(); err != nil { // kept open: the child waits on it
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatalf("child %s: %v; stderr:\n%s", mode, err, stderr.String())
	}
	return cmd, strings.TrimSuffix(line, "\n")
}

func kill9(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
}

// A crash between approval and execution: the process that asked is
// killed after the approval; the next process runs the effect once through
// ResumeApproved, with the stored arguments. Killed in the middle of that
// call, the effect is EXECUTING: no later ResumeApproved or Do runs it
// again; reconciliation decides.
func TestEffectCrashBetweenApprovalAndExecution(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	db, marker := filepath.Join(dir, "eventlite.db"), filepath.Join(dir, "calls.txt")
	env := []string{"EVENTLITE_DB=" + db, "EVENTLITE_MARKER=" + marker}

	asker, line := startEffectChild(t, "request", env...)
	hash, ok := strings.CutPrefix(line, "AWAITING ")
	if !ok {
		t.Fatalf("request child said %q", line)
	}
	s := storetest.MustOpenPath(t, db, nil)
	if _, err := effect.For(s).Approve(ctx, effect.Approval{Tenant: "default", Key: "delete:acct-1", ArgsHash: hash, By: "alice"}); err != nil {
		t.Fatal(err)
	}
	kill9(t, asker)

	runner, line := startEffectChild(t, "resume", env...)
	if line != "CALLING" {
		t.Fatalf("resume child said %q", line)
	}
	kill9(t, runner)
	calls := func() []string {
		b, err := os.ReadFile(marker)
		if err != nil {
			t.Fatal(err)
		}
		return strings.Split(strings.TrimSpace(string(b)), "\n")
	}
	if got := calls(); len(got) != 1 || got[0] != `delete:acct-1 {"account":"acct-1"}` {
		t.Fatalf("calls %q", got)
	}

	e, _, err := effect.For(s).Get(ctx, "default", "delete:acct-1")
	if err != nil || e.State != effect.Executing || e.DecidedBy != "alice" {
		t.Fatalf("after the kill mid-call: %+v %v", e, err)
	}
	res, err := effect.For(s).ResumeApproved(ctx, "default", func(context.Context, effect.Effect, json.RawMessage) (string, error) {
		t.Error("ResumeApproved ran an effect that may have happened")
		return "", nil
	})
	if err != nil || len(res) != 0 {
		t.Errorf("resume after the crash: %+v %v", res, err)
	}
	if _, err := effect.For(s).Do(ctx, effectCrashRun(), func(context.Context, json.RawMessage) (string, error) {
		t.Error("Do ran an effect that may have happened")
		return "", nil
	}); !errors.Is(err, effect.ErrState) {
		t.Errorf("Do after the crash: %v", err)
	}
	// The provider has it: reconciliation completes it, and it never runs again.
	if r, err := effect.For(s).Reconcile(ctx, time.Now().Add(time.Second), func(context.Context, effect.Effect) (effect.Happened, string, error) {
		return effect.DidHappen, "deletion-9", nil
	}); err != nil || r.Completed != 1 {
		t.Fatalf("reconcile: %+v %v", r, err)
	}
	e, err = effect.For(s).Do(ctx, effectCrashRun(), func(context.Context, json.RawMessage) (string, error) {
		t.Error("a completed effect ran again")
		return "", nil
	})
	if err != nil || e.State != effect.Completed || e.ProviderRef != "deletion-9" || len(calls()) != 1 {
		t.Errorf("%+v %v", e, err)
	}
}
