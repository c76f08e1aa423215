package projection_test

import (
	"bytes"
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/eventlite/eventlite/internal/inside"
	"github.com/eventlite/eventlite/projection"
	"github.com/eventlite/eventlite/store"
)

// hookWriter is a log output that runs hook, once, on the first line
// containing match, on the logging goroutine.
type hookWriter struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	match string
	hook  func()
	done  bool
}

func (w *hookWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	w.buf.Write(p)
	run := !w.done && bytes.Contains(p, []byte(w.match))
	if run {
		w.done = true
	}
	w.mu.Unlock()
	if run {
		w.hook()
	}
	return len(p), nil
}

func (w *hookWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// TestRunnerResumesWhenCheckpointMoves: a replay sets the projection's
// checkpoint (swapping a rebuilt read model in) between a runner's read
// of its batch and the batch's transaction. The batch is discarded (its
// compare-and-set on the checkpoint fails), the runner says so at info
// level and goes on from the new checkpoint instead of stopping.
//
// The checkpoint moves at a precise point: the runner logs a warning
// about a planted hole in the log after reading its batch and before its
// transaction; the log output moves the checkpoint right then.
func TestRunnerResumesWhenCheckpointMoves(t *testing.T) {
	ctx := context.Background()
	// Not storetest.MustOpen: its invariant check would (rightly) fail on
	// the planted hole.
	s, err := store.Open(ctx, filepath.Join(t.TempDir(), "moved.db"), &store.Options{Synchronous: "NORMAL"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	appendN(t, s, "a", 10)
	appendN(t, s, "b", 10)
	db, err := sql.Open("sqlite", s.Path())
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{`DELETE FROM outbox WHERE position IN (4, 5)`, `DELETE FROM events WHERE position IN (4, 5)`} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()

	var hookErr error
	out := &hookWriter{match: "passing a hole", hook: func() {
		hookErr = s.Update(ctx, func(tx *store.Tx) error {
			return store.Bookkeeping(inside.Key{}, tx).SetCheckpoint(ctx, "moved", 8, nil)
		})
	}}
	logger := hclog.New(&hclog.LoggerOptions{Level: hclog.Info, Output: out})
	r, err := projection.NewRunner(s, countingProjection("moved", nil), &projection.RunnerOptions{BatchSize: 100, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	cp, err := r.CatchUp(ctx)
	if hookErr != nil {
		t.Fatalf("moving the checkpoint: %v", hookErr)
	}
	if err != nil || cp != 20 {
		t.Fatalf("CatchUp = %d, %v; want 20 and no error", cp, err)
	}
	got := applied(t, s, "moved_applied")
	for p := int64(1); p <= 20; p++ {
		want := 0
		if p > 8 {
			want = 1
		}
		if got[p] != want {
			t.Errorf("position %d applied %d times, want %d (the batch read before the move is discarded)", p, got[p], want)
		}
	}
	if !strings.Contains(out.String(), "checkpoint moved: a replay swapped in a rebuilt read model; resuming from 8") {
		t.Errorf("no info line about the moved checkpoint in the log:\n%s", out)
	}
}
