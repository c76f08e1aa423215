package pgdriver

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/eventlite/eventlite/store/internal/driver"
)

// TestFileMethodsUnsupported: a database on a server has no file to open,
// copy or read a header from.
func TestFileMethodsUnsupported(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var x Exec
	_, _, openErr := x.OpenFile(ctx, "events.db", driver.FileOptions{})
	_, headerErr := x.FileHeader(ctx, "events.db")
	for name, err := range map[string]error{
		"OpenFile":         openErr,
		"CopyFile":         x.CopyFile(ctx, nil, "copy.db", 1, nil),
		"SealFile":         x.SealFile(ctx, nil),
		"CopyInto":         x.CopyInto(ctx, nil, "copy.db", 4096, 1, nil, nil),
		"FileHeader":       headerErr,
		"SetApplicationID": x.SetApplicationID(ctx, nil, 1),
	} {
		if !errors.Is(err, driver.ErrUnsupported) {
			t.Errorf("%s: %v, want ErrUnsupported", name, err)
		}
	}
}

// TestRestoreMarks: RaiseSequence only ever raises the head's position,
// RecordRestoreHole widens a hole recorded at the same start, and
// HolesDetectedBy lists one detector's holes.
func TestRestoreMarks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, err := Driver{}.OpenWriter(driver.OpenConfig{Path: withSchema(t, freshSchema(t))})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ms, err := Migrations()
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		if _, err := (Driver{}).ApplyMigration(ctx, conn, m, nil); err != nil {
			t.Fatal(err)
		}
	}
	_ = conn.Close()

	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var x Exec
	for _, step := range []func() error{
		func() error { return x.RaiseSequence(ctx, tx, 10) },
		func() error { return x.RaiseSequence(ctx, tx, 5) },
		func() error { return x.RecordRestoreHole(ctx, tx, 1, 10, "restore", 1) },
		func() error { return x.RecordRestoreHole(ctx, tx, 1, 12, "restore", 2) },
		func() error { return x.RecordRestoreHole(ctx, tx, 1, 8, "restore", 3) },
		func() error { return x.RecordRestoreHole(ctx, tx, 20, 30, "restore", 4) },
		func() error { return x.RecordRestoreHole(ctx, tx, 40, 41, "other", 5) },
	} {
		if err := step(); err != nil {
			_ = tx.Rollback()
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	var head int64
	if err := db.QueryRowContext(ctx, `SELECT position FROM log_head`).Scan(&head); err != nil {
		t.Fatal(err)
	}
	if head != 10 {
		t.Errorf("head position %d, want 10", head)
	}
	holes, err := x.HolesDetectedBy(ctx, db, "restore")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]driver.FileHole{{From: 1, To: 12}, {From: 20, To: 30}}, holes); diff != "" {
		t.Errorf("restore holes (-want +got):\n%s", diff)
	}
	if holes, err := x.HolesDetectedBy(ctx, db, "nobody"); err != nil || holes != nil {
		t.Errorf("holes of nobody: %v, %v; want none", holes, err)
	}
}
