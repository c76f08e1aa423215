package sqlitedriver_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/internal/driver"
	"github.com/eventlite/eventlite/store/internal/sqlitedriver"
	"github.com/eventlite/eventlite/store/lifecycle"
)

// TestCheckLogOrder: on a file of the newest schema, CheckLog counts
// every invariant but the outbox row per event (the watermark replaced
// it), in the order of the constants, which is the order of the
// problems a user reads.
func TestCheckLogOrder(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "eventlite.db")
	s, err := store.Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	x := sqlitedriver.Exec{}
	db, conn, err := x.OpenFile(ctx, path, driver.FileOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	defer conn.Close()
	got, err := x.CheckLog(ctx, conn, lifecycle.TypeStreamDeleted)
	if err != nil {
		t.Fatal(err)
	}
	want := driver.VersionsGapFree
	for _, v := range got {
		if want == driver.EventsHaveOutboxRow {
			want++
		}
		if v.Invariant != want || v.Count != 0 {
			t.Fatalf("CheckLog: %v, want invariant %d with no break next", got, want)
		}
		want++
	}
	if want != driver.RemovedBelowSequence+1 {
		t.Fatalf("CheckLog: %v, want every invariant up to %d", got, driver.RemovedBelowSequence)
	}
	if msgs, err := x.IntegrityCheck(ctx, conn); err != nil || len(msgs) != 0 {
		t.Fatalf("IntegrityCheck: %q, %v; want none", msgs, err)
	}
}
