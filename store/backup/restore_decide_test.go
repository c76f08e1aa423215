package backup_test

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"testing"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/backup"
)

// TestRestoreAppendRightAfterCommit: a writer that appends between the
// restore's commit and its check after it (the hook makes the race
// certain) fails nothing: the check looks only at what writers cannot
// change, the restore succeeds and reports the backup's content, and the
// append stays, above the floor.
func TestRestoreAppendRightAfterCommit(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	live := filepath.Join(dir, "live.db")
	fillStore(t, live, "b", 20)
	bak := filepath.Join(dir, "backup.db")
	if _, err := backup.Create(ctx, live, bak, nil); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(dir, "target.db")
	fillStore(t, target, "old", 30)
	w, err := store.Open(ctx, target, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	var appended int64
	defer backup.SetRestoreHooks(nil, func(string) {
		r, err := w.Append(ctx, "default", "racer", store.Any, envelope.Event{Source: "/test", Type: "t.raced"})
		if err != nil {
			t.Errorf("append right after the restore's commit: %v", err)
			return
		}
		appended = r.LastPosition()
	})()
	res, err := backup.Restore(ctx, bak, target, &backup.RestoreOptions{Force: true})
	if err != nil {
		t.Fatalf("restore with an append right after its commit: %v", err)
	}
	if res.Events != 20 || res.HeadPosition != 20 || res.Sequence != 30 || res.PreviousEvents != 30 {
		t.Errorf("result %+v, want the backup's 20 events up to 20, sequence 30, 30 events before", res)
	}
	if appended <= 30 {
		t.Errorf("the racing append got position %d, want one above the old file's 30", appended)
	}
	got := withoutRestored(t, readLog(t, target), res)
	if len(got) != 21 || got["default/"+"b-0"].Position != 1 {
		t.Errorf("after the restore and the racing append the log holds %d events (%v), want the backup's 20 and the append", len(got), got["default/b-0"])
	}
}

// TestRestoreUnverifiedAfterCommit: when the check after the commit
// finds the snapshot's events changed (here a row removed behind the
// store's back, between the commit and the check), the error says the
// database was replaced (ErrRestoreUnverified), not that the backup
// failed its checks (which means nothing changed).
func TestRestoreUnverifiedAfterCommit(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	live := filepath.Join(dir, "live.db")
	fillStore(t, live, "b", 20)
	bak := filepath.Join(dir, "backup.db")
	if _, err := backup.Create(ctx, live, bak, nil); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(dir, "target.db")
	fillStore(t, target, "old", 30)
	defer backup.SetRestoreHooks(nil, func(target string) {
		db, err := sql.Open("sqlite", "file:"+target)
		if err != nil {
			t.Error(err)
			return
		}
		defer db.Close()
		if _, err := db.Exec(`DELETE FROM events WHERE position = 5`); err != nil {
			t.Errorf("damage the restored file: %v", err)
		}
	})()
	_, err := backup.Restore(ctx, bak, target, &backup.RestoreOptions{Force: true})
	var ue *backup.RestoreUnverifiedError
	if !errors.As(err, &ue) || !errors.Is(err, backup.ErrRestoreUnverified) || errors.Is(err, backup.ErrInvalid) {
		t.Fatalf("restore whose check after the commit fails: %v, want *RestoreUnverifiedError and not ErrBackupInvalid", err)
	}
	if len(ue.Problems) != 1 {
		t.Errorf("problems %q, want the events up to the head", ue.Problems)
	}
}

// TestRestoreDecidesUnderLockRollbackJournal: a target in rollback-
// journal mode (which SQLite's backup API locks exclusively) is read
// under the restore's lock all the same: an event appended to it right
// before the lock (the hook) makes the restore refuse it without Force,
// and the target keeps that event.
func TestRestoreDecidesUnderLockRollbackJournal(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	live := filepath.Join(dir, "live.db")
	fillStore(t, live, "b", 20)
	bak := filepath.Join(dir, "backup.db")
	if _, err := backup.Create(ctx, live, bak, nil); err != nil {
		t.Fatal(err)
	}
	// An empty store, in rollback-journal mode (a backup of one is).
	empty := filepath.Join(dir, "empty.db")
	fillStore(t, empty, "e", 0)
	target := filepath.Join(dir, "target.db")
	if _, err := backup.Create(ctx, empty, target, nil); err != nil {
		t.Fatal(err)
	}
	defer backup.SetRestoreHooks(func(target string) {
		s, err := store.Open(ctx, target, nil)
		if err != nil {
			t.Error(err)
			return
		}
		if _, err := s.Append(ctx, "default", "late", store.NoStream, envelope.Event{ID: "late-1", Source: "/test", Type: "t.late"}); err != nil {
			t.Error(err)
		}
		if err := s.Close(); err != nil {
			t.Error(err)
		}
		// Back to rollback journal, as the file was.
		db, err := sql.Open("sqlite", "file:"+target)
		if err != nil {
			t.Error(err)
			return
		}
		defer db.Close()
		var mode string
		if err := db.QueryRow(`PRAGMA journal_mode=DELETE`).Scan(&mode); err != nil || mode != "delete" {
			t.Errorf("journal mode %q: %v", mode, err)
		}
	}, nil)()
	_, err := backup.Restore(ctx, bak, target, nil)
	if !errors.Is(err, backup.ErrTargetNotEmpty) {
		t.Fatalf("restore over a rollback-journal target that got an event right before the lock: %v, want ErrTargetNotEmpty", err)
	}
	got := readLog(t, target)
	if len(got) != 1 || got["default/late-1"].Stream != "late" {
		t.Errorf("the refused restore changed the target: %v", got)
	}
}
