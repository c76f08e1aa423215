package pgdriver

import (
	"context"
	"testing"
	"time"

	"github.com/eventlite/eventlite/store/internal/driver"
)

// TestSetCheckpointFence: a fenced SetCheckpoint (the fence check and the
// upsert in one statement) writes only for the lease's current holder,
// answers false and writes nothing for a stale token, another owner or a
// resource without a lease, and keeps the lease row locked FOR SHARE
// until its transaction ends: a new holder's AcquireLease waits for it.
func TestSetCheckpointFence(t *testing.T) {
	ctx := context.Background()
	db := consumerTestDB(t)
	var ex Exec
	g, err := ex.AcquireLease(ctx, db, "projection:p", "a", time.Hour.Milliseconds())
	if err != nil || g.Held {
		t.Fatalf("acquire: %+v, %v", g, err)
	}
	good := driver.Fence{Resource: "projection:p", Owner: "a", Token: g.Token}
	for _, c := range []struct {
		name  string
		fence driver.Fence
	}{
		{"stale token", driver.Fence{Resource: good.Resource, Owner: "a", Token: g.Token + 1}},
		{"another owner", driver.Fence{Resource: good.Resource, Owner: "b", Token: g.Token}},
		{"no lease row", driver.Fence{Resource: "projection:none", Owner: "a", Token: g.Token}},
	} {
		ok, err := ex.SetCheckpoint(ctx, db, "p", 3, &c.fence, 1)
		if err != nil || ok {
			t.Errorf("%s: SetCheckpoint = %v, %v; want false", c.name, ok, err)
		}
		if cp, err := ex.Checkpoint(ctx, db, "p"); err != nil || cp != 0 {
			t.Errorf("%s: checkpoint %d, %v after a refused write; want none", c.name, cp, err)
		}
	}

	c1, _ := consumerTx(t, db)
	if ok, err := ex.SetCheckpoint(ctx, c1, "p", 5, &good, 1); err != nil || !ok {
		t.Fatalf("holder: SetCheckpoint = %v, %v; want true", ok, err)
	}
	c2, pid2 := consumerTx(t, db)
	done := make(chan error, 1)
	go func() {
		// The lease is live, so b is refused in the end; its read of
		// the row FOR UPDATE is what must wait.
		_, err := ex.AcquireLease(ctx, c2, "projection:p", "b", time.Hour.Milliseconds())
		done <- err
	}()
	consumerLockWait(t, db, pid2)
	if _, err := c1.ExecContext(ctx, "COMMIT"); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("acquire after the commit: %v", err)
	}
	if _, err := c2.ExecContext(ctx, "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	if cp, err := ex.Checkpoint(ctx, db, "p"); err != nil || cp != 5 {
		t.Errorf("checkpoint %d, %v; want 5", cp, err)
	}
}
