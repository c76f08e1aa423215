package backup_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/backup"
	"github.com/eventlite/eventlite/store/storetest"
)

// TestRestoreKilled kills a restore process after it copied the first page
// into the target, under the target's write lock: the target, reopened,
// holds its old events, all of them and nothing else.
func TestRestoreKilled(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "live.db")
	fillStore(t, src, "new", 300)
	bak := filepath.Join(dir, "backup.db")
	if _, err := backup.Create(context.Background(), src, bak, nil); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(dir, "target.db")
	fillStore(t, target, "old", 40)
	want := readLog(t, target)
	cmd, _, out := startBackupChild(t, "restore", envBackupSrc+"="+bak, envBackupDest+"="+target)
	expectLine(t, out, "STEP")
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if diff := cmp.Diff(want, readLog(t, target)); diff != "" {
		t.Fatalf("after kill -9 in the middle of a restore the target changed (-before +after):\n%s", diff)
	}
}

// fileBytes returns path's bytes (or "<missing>").
func fileBytes(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return "<missing>"
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestRestore restores a backup over targets in every state.
func TestRestore(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	// The backup: 20 events.
	live := filepath.Join(dir, "live.db")
	fillStore(t, live, "b", 20)
	bak := filepath.Join(dir, "backup.db")
	if _, err := backup.Create(ctx, live, bak, nil); err != nil {
		t.Fatal(err)
	}
	wantBackup := readLog(t, bak)

	// newTarget makes a directory with a target of n events (n < 0: no
	// file; n == 0: an empty store).
	newTarget := func(t *testing.T, n int) string {
		target := filepath.Join(t.TempDir(), "target.db")
		switch {
		case n > 0:
			fillStore(t, target, "old", n)
		case n == 0:
			fillStore(t, target, "old", 0)
		}
		return target
	}
	// restored checks that target now holds the backup and that a new
	// append gets a position above floor.
	restored := func(t *testing.T, target string, res backup.RestoreResult, floor int64) {
		t.Helper()
		if diff := cmp.Diff(wantBackup, withoutRestored(t, readLog(t, target), res)); diff != "" {
			t.Fatalf("restored log (-backup +target):\n%s", diff)
		}
		if res.Events != 20 || res.HeadPosition != 20 || res.Sequence < floor {
			t.Errorf("result %+v, want 20 events, head 20, sequence >= %d", res, floor)
		}
		s, err := store.Open(ctx, target, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		r, err := s.Append(ctx, "default", "after-restore", store.NoStream, envelope.Event{Source: "/test", Type: "t.after"})
		if err != nil {
			t.Fatal(err)
		}
		if p := r.LastPosition(); p <= floor || p <= 20 {
			t.Errorf("the first append after the restore got position %d; the old file had handed out up to %d", p, floor)
		}
		// The positions left unused are a known hole, not damage.
		if err := s.CheckInvariants(ctx); err != nil {
			t.Errorf("after the restore and an append: %v", err)
		}
		findings, err := s.Diagnose(ctx, store.DiagnoseOptions{})
		if err != nil {
			t.Fatal(err)
		}
		restoreHole := false
		for _, f := range findings {
			if f.Severity == store.SeverityProblem {
				t.Errorf("doctor finds a problem after the restore: %+v", f)
			}
			restoreHole = restoreHole || f.Kind == "position_holes_restore"
		}
		if restoreHole != (floor > 20) {
			t.Errorf("doctor reports the restore's hole: %v; want %v (%+v)", restoreHole, floor > 20, findings)
		}
	}

	t.Run("no target", func(t *testing.T) {
		target := newTarget(t, -1)
		res, err := backup.Restore(ctx, bak, target, nil)
		if err != nil {
			t.Fatal(err)
		}
		restored(t, target, res, 0)
	})
	t.Run("min sequence", func(t *testing.T) {
		target := newTarget(t, -1)
		res, err := backup.Restore(ctx, bak, target, &backup.RestoreOptions{MinSequence: 1000})
		if err != nil {
			t.Fatal(err)
		}
		restored(t, target, res, 1000)
	})
	t.Run("empty store", func(t *testing.T) {
		target := newTarget(t, 0)
		res, err := backup.Restore(ctx, bak, target, nil)
		if err != nil {
			t.Fatal(err)
		}
		restored(t, target, res, 0)
	})
	t.Run("target with events", func(t *testing.T) {
		target := newTarget(t, 50)
		before := fileBytes(t, target)
		_, err := backup.Restore(ctx, bak, target, nil)
		var te *backup.TargetNotEmptyError
		if !errors.Is(err, backup.ErrTargetNotEmpty) || !errors.As(err, &te) || te.Events != 50 {
			t.Fatalf("Restore over 50 events: %v, want a *TargetNotEmptyError with 50 events", err)
		}
		if fileBytes(t, target) != before {
			t.Fatalf("the refused target changed")
		}
		res, err := backup.Restore(ctx, bak, target, &backup.RestoreOptions{Force: true})
		if err != nil {
			t.Fatalf("Restore with Force: %v", err)
		}
		if res.PreviousEvents != 50 || res.PreviousSequence != 50 {
			t.Errorf("previous %d events, sequence %d; want 50, 50", res.PreviousEvents, res.PreviousSequence)
		}
		restored(t, target, res, 50)
	})
	t.Run("target open in another store", func(t *testing.T) {
		// A process that has the target open sees the restored content.
		target := newTarget(t, 30)
		s, err := store.Open(ctx, target, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		res, err := backup.Restore(ctx, bak, target, &backup.RestoreOptions{Force: true})
		if err != nil {
			t.Fatal(err)
		}
		// The target's three streams are not the backup's: each gets
		// the restore's event, above the old head.
		if h, err := s.Head(ctx); err != nil || h != 30+int64(len(res.RolledBack)) || len(res.RolledBack) != 3 {
			t.Errorf("the open store sees head %d (%v) after %d streams taken back, want 33 after 3", h, err, len(res.RolledBack))
		}
		r, err := s.Append(ctx, "default", "open-after", store.NoStream, envelope.Event{Source: "/test", Type: "t.after"})
		if err != nil {
			t.Fatal(err)
		}
		if r.LastPosition() <= 30 {
			t.Errorf("an append through the store that was open got position %d, at or below the old head 30", r.LastPosition())
		}
		if err := s.CheckInvariants(ctx); err != nil {
			t.Error(err)
		}
	})

	// Sources that fail their checks; the target is left byte for byte.
	foreign := filepath.Join(dir, "foreign.db")
	storetest.RawExec(t, foreign, `CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT)`, `INSERT INTO customers (name) VALUES ('x')`)
	text := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(text, []byte(strings.Repeat("not a database\n", 500)), 0o644); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty.db")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	corrupt := filepath.Join(dir, "corrupt.db")
	b := []byte(fileBytes(t, bak))
	for i := 4096 * 2; i < len(b)-4096; i++ {
		b[i] = byte(i * 7)
	}
	if err := os.WriteFile(corrupt, b, 0o644); err != nil {
		t.Fatal(err)
	}
	truncated := filepath.Join(dir, "truncated.db")
	if err := os.WriteFile(truncated, []byte(fileBytes(t, bak))[:4096*3], 0o644); err != nil {
		t.Fatal(err)
	}
	broken := filepath.Join(dir, "broken.db") // valid SQLite, broken invariants
	fillStore(t, broken, "x", 20)
	storetest.RawExec(t, broken, `UPDATE outbox_watermark SET settled = 5`) // 5 unpublished events below it
	for _, tc := range []struct {
		name, src string
		want      error
	}{
		{"foreign database", foreign, store.ErrNotEventlite},
		{"text file", text, store.ErrNotEventlite},
		{"empty file", empty, store.ErrNotEventlite},
		{"corrupt pages", corrupt, backup.ErrInvalid},
		{"truncated", truncated, backup.ErrInvalid},
		{"broken invariants", broken, backup.ErrInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			target := newTarget(t, 7)
			before := storetest.DirDigest(t, filepath.Dir(target))
			_, err := backup.Restore(ctx, tc.src, target, &backup.RestoreOptions{Force: true})
			if !errors.Is(err, tc.want) {
				t.Fatalf("Restore from %s: %v, want %v", tc.name, err, tc.want)
			}
			t.Logf("refused: %v", err)
			if diff := cmp.Diff(before, storetest.DirDigest(t, filepath.Dir(target))); diff != "" {
				t.Fatalf("the target changed (-before +after):\n%s", diff)
			}
		})
	}

	t.Run("target with another page size", func(t *testing.T) {
		target := filepath.Join(t.TempDir(), "target.db")
		storetest.RawExec(t, target, "PRAGMA page_size = 8192", "PRAGMA journal_mode = WAL")
		fillStore(t, target, "old", 3) // an eventlite database of 8 KiB pages
		before := storetest.DirDigest(t, filepath.Dir(target))
		_, err := backup.Restore(ctx, bak, target, &backup.RestoreOptions{Force: true})
		if err == nil || !strings.Contains(err.Error(), "8192") {
			t.Fatalf("Restore into a WAL file of 8 KiB pages: %v, want an error naming the page sizes", err)
		}
		if diff := cmp.Diff(before, storetest.DirDigest(t, filepath.Dir(target))); diff != "" {
			t.Fatalf("the target changed (-before +after):\n%s", diff)
		}
	})
	t.Run("target of another program", func(t *testing.T) {
		target := filepath.Join(t.TempDir(), "app.db")
		storetest.RawExec(t, target, "PRAGMA journal_mode = WAL", "CREATE TABLE users (x)", "INSERT INTO users VALUES (1)")
		before := storetest.DirDigest(t, filepath.Dir(target))
		_, err := backup.Restore(ctx, bak, target, &backup.RestoreOptions{Force: true})
		if !errors.Is(err, store.ErrNotEventlite) {
			t.Fatalf("Restore over another program's database with Force: %v, want ErrNotEventlite", err)
		}
		if diff := cmp.Diff(before, storetest.DirDigest(t, filepath.Dir(target))); diff != "" {
			t.Fatalf("the target changed (-before +after):\n%s", diff)
		}
	})
	t.Run("target locked by another process", func(t *testing.T) {
		target := newTarget(t, 7)
		before := fileBytes(t, target)
		_, stdin, out := startBackupChild(t, "lock", envDB+"="+target)
		expectLine(t, out, "LOCKED")
		_, err := backup.Restore(ctx, bak, target, &backup.RestoreOptions{Force: true, BusyTimeout: 200 * time.Millisecond})
		if !errors.Is(err, store.ErrBusy) {
			t.Fatalf("Restore while another process holds the write lock: %v, want ErrBusy", err)
		}
		t.Logf("refused: %v", err)
		_ = stdin.Close()
		if _, err := out.ReadString('\n'); err != io.EOF {
			t.Fatalf("lock child: %v", err)
		}
		if fileBytes(t, target) != before {
			t.Errorf("the target file changed")
		}
		if got := readLog(t, target); len(got) != 7 {
			t.Errorf("the target holds %d events, want its 7", len(got))
		}
	})
}

// TestRestoreOlderSchema restores a backup of a schema-4 file (built from
// the first four migration files, without position_holes): it is restored
// as it is, and the next Open migrates it like any file.
func TestRestoreOlderSchema(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	old := filepath.Join(dir, "old.db")
	var stmts []string
	for _, name := range []string{"0001_event_log.sql", "0002_operations_snapshots.sql", "0003_leases_checkpoints.sql", "0004_outbox_relay.sql"} {
		b, err := os.ReadFile(filepath.Join("..", "internal", "sqlitedriver", "migrations", name))
		if err != nil {
			t.Fatal(err)
		}
		stmts = append(stmts, string(b))
	}
	stmts = append(stmts, "PRAGMA user_version = 4", "PRAGMA journal_mode = WAL")
	for i := 1; i <= 5; i++ {
		stmts = append(stmts,
			fmt.Sprintf(`INSERT INTO events (tenant, stream_id, version, event_id, type, source, time, content_type, data, recorded_at)
				VALUES ('default', 'old-1', %d, 'old-%d', 'old.happened', '/old', 1, 'application/json', '{}', 1)`, i, i),
			fmt.Sprintf(`INSERT INTO outbox (position) VALUES (%d)`, i))
	}
	stmts = append(stmts, `INSERT INTO streams (tenant, stream_id, version, created_at, updated_at) VALUES ('default', 'old-1', 5, 1, 1)`)
	storetest.RawExec(t, old, stmts...)
	bak := filepath.Join(dir, "old-backup.db")
	if _, err := backup.Create(ctx, old, bak, nil); err != nil {
		t.Fatalf("backup of a schema-4 file: %v", err)
	}
	if v := rawQueryString(t, old, "PRAGMA user_version"); v != "4" {
		t.Fatalf("the backup changed its source's schema to %s", v)
	}
	target := filepath.Join(dir, "target.db")
	res, err := backup.Restore(ctx, bak, target, nil)
	if err != nil {
		t.Fatalf("restore of a schema-4 backup: %v", err)
	}
	if res.SchemaVersion != 4 || res.Events != 5 {
		t.Errorf("result %+v, want schema 4, 5 events", res)
	}
	if v := rawQueryString(t, target, "PRAGMA user_version"); v != "4" {
		t.Fatalf("restored schema %s, want 4 (as it was)", v)
	}
	got := readLog(t, target) // Open migrates it
	if len(got) != 5 || got["default/old-5"].Version != 5 {
		t.Errorf("restored log %v", got)
	}
	if v := rawQueryString(t, target, "PRAGMA user_version"); v != strconv.Itoa(store.SchemaVersion()) {
		t.Errorf("after Open: schema %s, want %d", v, store.SchemaVersion())
	}

	// Over a current target that handed out 30 positions: the old
	// backup has no position floor, so the restore raises its SQLite
	// sequence, and the migration the next Open runs turns that into
	// the floor: the next append continues above 30.
	newer := filepath.Join(dir, "newer.db")
	fillStore(t, newer, "newer", 30)
	if _, err := backup.Restore(ctx, bak, newer, &backup.RestoreOptions{Force: true}); err != nil {
		t.Fatalf("restore of a schema-4 backup over 30 events: %v", err)
	}
	if v := rawQueryString(t, newer, "SELECT seq FROM sqlite_sequence WHERE name = 'events'"); v != "30" {
		t.Errorf("restored schema-4 file: sequence %s, want 30", v)
	}
	s, err := store.Open(ctx, newer, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	r, err := s.Append(ctx, "default", "after", store.NoStream, envelope.Event{Source: "/test", Type: "t.after"})
	if err != nil {
		t.Fatal(err)
	}
	if r.FirstPosition() != 31 {
		t.Errorf("first append after restoring a schema-4 backup over 30 positions: %d, want 31", r.FirstPosition())
	}
	// (Positions 6-30 are not recorded as the restore's hole: a schema-4
	// file has no position_holes table to record them in.)
}
