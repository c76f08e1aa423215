package store_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/lifecycle"
	"github.com/eventlite/eventlite/store/storetest"
)

// TestScavengeCheckpointLockHeld: when another connection holds the WAL
// checkpoint lock (a second scavenge checkpointing at the same time),
// SQLite answers the checkpoint with busy and -1 frames; the scavenge
// then returns ErrBusy with what happened and what to do, not
// "-1 of -1 WAL frames checkpointed".
func TestScavengeCheckpointLockHeld(t *testing.T) {
	ctx := context.Background()
	s := storetest.MustOpen(t, nil)
	defer store.SetScavengeCheckpoint(func(bool, int64, int64, error) (bool, int64, int64, error) {
		return true, -1, -1, nil // what SQLite answers when the checkpoint lock is held
	})()
	_, err := lifecycle.For(s).Scavenge(ctx, lifecycle.ScavengeOptions{})
	if !errors.Is(err, store.ErrBusy) || errors.Is(err, lifecycle.ErrCheckpointBlocked) {
		t.Fatalf("scavenge while another connection checkpoints: %v, want ErrBusy", err)
	}
	if msg := err.Error(); strings.Contains(msg, "-1") || !strings.Contains(msg, "second scavenge") || !strings.Contains(msg, "run the scavenge again") {
		t.Errorf("message %q: want what happened and what to do, no -1 frame counts", msg)
	}
}
