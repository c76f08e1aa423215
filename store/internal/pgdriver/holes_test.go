package pgdriver

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/eventlite/eventlite/store/internal/driver"
)

// TestHolesDetectedBy: HolesDetectedBy lists one detector's holes, by
// first position.
func TestHolesDetectedBy(t *testing.T) {
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
	for _, h := range []struct {
		from, to int64
		by       string
	}{{20, 30, "restore"}, {1, 12, "restore"}, {40, 41, "other"}} {
		if _, err := tx.ExecContext(ctx, `INSERT INTO position_holes (from_position, to_position, detected_by, detected_at) VALUES ($1, $2, $3, 1)`, h.from, h.to, h.by); err != nil {
			_ = tx.Rollback()
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	var x Exec
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
