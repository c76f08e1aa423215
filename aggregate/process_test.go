package aggregate_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/eventlite/eventlite/aggregate"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/storetest"
)

// TestHelperProcess is not a test: the cross-process tests run the test
// binary again as a child with EVENTLITE_AGG_HELPER set.
func TestHelperProcess(t *testing.T) {
	if os.Getenv("EVENTLITE_AGG_HELPER") != "duplicates" {
		return
	}
	ctx := context.Background()
	n, _ := strconv.Atoi(os.Getenv("EVENTLITE_OPS"))
	s, err := store.Open(ctx, os.Getenv("EVENTLITE_DB"), &store.Options{Synchronous: "NORMAL"})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	h, err := aggregate.New(s, counterDef(), &aggregate.Options{MaxAttempts: 1000})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	for i := range n {
		r, err := h.Handle(ctx, aggregate.Command{Stream: "c", OperationID: fmt.Sprintf("op-%d", i), Payload: Add{N: 1}})
		switch {
		case err != nil:
			fmt.Println("error", i, err)
		case r.Replayed:
			fmt.Println("replayed", i, r.Version)
		default:
			fmt.Println("executed", i, r.Version)
		}
	}
	s.Close()
	os.Exit(0)
}

// TestConcurrentDuplicatesAcrossProcesses: several processes send the
// same operation ids at the same time; each operation executes exactly
// once and every process gets its result.
func TestConcurrentDuplicatesAcrossProcesses(t *testing.T) {
	ops, children := 60, 3
	if testing.Short() {
		ops = 10
	}
	path := filepath.Join(t.TempDir(), "dup.db")
	s := storetest.MustOpenPath(t, path, nil) // creates the file; checks invariants at the end
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	executed := map[int]int{}
	versions := map[int]map[string]bool{}
	var wg sync.WaitGroup
	for c := range children {
		cmd := exec.Command(exe, "-test.run=^TestHelperProcess$")
		cmd.Env = append(os.Environ(), "EVENTLITE_AGG_HELPER=duplicates", "EVENTLITE_DB="+path, "EVENTLITE_OPS="+strconv.Itoa(ops))
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				f := strings.Fields(sc.Text())
				if len(f) < 3 || f[0] == "error" {
					t.Errorf("child %d: %s", c, sc.Text())
					continue
				}
				i, _ := strconv.Atoi(f[1])
				mu.Lock()
				if f[0] == "executed" {
					executed[i]++
				}
				if versions[i] == nil {
					versions[i] = map[string]bool{}
				}
				versions[i][f[2]] = true
				mu.Unlock()
			}
			if err := cmd.Wait(); err != nil {
				t.Errorf("child %d: %v", c, err)
			}
		})
	}
	wg.Wait()
	for i := range ops {
		if executed[i] != 1 {
			t.Errorf("op-%d executed %d times", i, executed[i])
		}
		if len(versions[i]) != 1 {
			t.Errorf("op-%d: the processes saw different results %v", i, versions[i])
		}
	}
	if v, _ := s.StreamVersion(context.Background(), "default", "c"); v != int64(ops) {
		t.Errorf("stream version %d, want %d", v, ops)
	}
}
