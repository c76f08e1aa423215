package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/eventlite/eventlite/internal/inside"
	"github.com/eventlite/eventlite/projection"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/storetest"
)

// TestProjectionsShowOrphaned: a projection whose lease is held by a
// process on this host that is gone, expired for a lease period with no
// runner taking over, is "orphaned" in projections and a problem for
// doctor.
func TestProjectionsShowOrphaned(t *testing.T) {
	ctx := t.Context()
	db := newDB(t)
	s := storetest.MustOpenPath(t, db, nil)
	mustRun(t, "", "append", "s", "--type", "thing.happened", "--db", db)
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Skip("no 'true' command to get the pid of a finished process:", err)
	}
	host, _ := os.Hostname()
	owner := fmt.Sprintf("%s:%d:DEADBEEF", host, gone.Process.Pid)
	if err := s.Update(ctx, func(tx *store.Tx) error {
		return store.Bookkeeping(inside.Key{}, tx).SetProjectionStatus(ctx, "ledger", string(projection.StatusActive), "")
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Inner(inside.Key{}, s).AcquireLease(ctx, projection.LeaseResource("ledger"), owner, 50*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	// WaitFor reports the orphan once it is one: the signal to look.
	if err := projection.WaitFor(ctx, s, "ledger", 1); !errors.Is(err, projection.ErrOwnerGone) {
		t.Fatalf("WaitFor = %v, want ErrOwnerGone", err)
	}
	out := mustRun(t, "", "projections", "--db", db, "--json")
	var st projection.Stats
	if err := json.Unmarshal([]byte(out.stdout), &st); err != nil || st.Name != "ledger" || st.Status != "orphaned" || !strings.Contains(st.Detail, owner) {
		t.Fatalf("projections --json: %s (%v)", out.stdout, err)
	}
	if out := mustRun(t, "", "projections", "--db", db); !strings.Contains(out.stdout, "orphaned") {
		t.Errorf("projections:\n%s", out.stdout)
	}
	r := run(t, "", "doctor", "--db", db, "--json")
	if r.code != exitIncomplete || !strings.Contains(r.stdout, `"projections_orphaned"`) || !strings.Contains(r.stdout, owner) {
		t.Fatalf("doctor: exit %d\n%s", r.code, r.stdout)
	}
}
