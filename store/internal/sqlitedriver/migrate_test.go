package sqlitedriver

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/eventlite/eventlite/store/internal/driver"
)

func openConn(t *testing.T) *sql.Conn {
	t.Helper()
	cfg := driver.OpenConfig{Path: filepath.Join(t.TempDir(), "m.db"), BusyTimeout: time.Second, Synchronous: "FULL", JournalSizeLimit: 1 << 20}
	db, err := Driver{}.OpenWriter(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	c, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// TestApplyMigrationForeignKeysOff: a migration marked foreign_keys off
// that leaves a row without its parent is refused as a MigrationError
// before it commits, the schema version and tables stay as they were,
// and the connection has foreign keys on again; a migration already
// applied (by another process) is not run twice.
func TestApplyMigrationForeignKeysOff(t *testing.T) {
	ctx := context.Background()
	c := openConn(t)
	d := Driver{}
	base := driver.Migration{Version: 1, Name: "0001_t.sql", SQL: `CREATE TABLE p (id INTEGER PRIMARY KEY);
		CREATE TABLE c (id INTEGER PRIMARY KEY, p INTEGER NOT NULL REFERENCES p(id));
		INSERT INTO p VALUES (1); INSERT INTO c VALUES (1, 1);`}
	if applied, err := d.ApplyMigration(ctx, c, base, nil); err != nil || !applied {
		t.Fatalf("first migration: applied %v, %v", applied, err)
	}
	if applied, err := d.ApplyMigration(ctx, c, base, nil); err != nil || applied {
		t.Fatalf("first migration again: applied %v, %v; want false, nil", applied, err)
	}
	broken := driver.Migration{Version: 2, Name: "0002_t.sql", SQL: fkOffMarker + `DROP TABLE p; CREATE TABLE p (id INTEGER PRIMARY KEY);`}
	var counted int64 = -1
	_, err := d.ApplyMigration(ctx, c, broken, func(n int64) { counted = n })
	var me *driver.MigrationError
	if !errors.As(err, &me) || me.Name != broken.Name || !strings.Contains(err.Error(), "foreign key check: a row of c") {
		t.Fatalf("broken migration: %v, want a MigrationError of the foreign key check", err)
	}
	if counted != -1 {
		t.Errorf("rebuilding called with %d for a file without an events table", counted)
	}
	if v, err := d.SchemaVersion(ctx, c); err != nil || v != 1 {
		t.Errorf("schema version %d, %v; want 1", v, err)
	}
	var parents int
	if err := c.QueryRowContext(ctx, `SELECT count(*) FROM p`).Scan(&parents); err != nil || parents != 1 {
		t.Errorf("parents %d, %v; want the row back", parents, err)
	}
	if fk, err := d.Setting(ctx, c, "foreign_keys"); err != nil || fk != "1" {
		t.Errorf("foreign_keys %q, %v; want 1 again", fk, err)
	}
}

// TestDSN: a write connection takes the write lock at once, a read-only
// store's connections refuse writes, and one that reads another user's
// file opens it read-only and sets nothing that would write.
func TestDSN(t *testing.T) {
	cfg := driver.OpenConfig{Path: "/a b/x?y#z%.db", BusyTimeout: 5 * time.Second, Synchronous: "NORMAL", JournalSizeLimit: 64 << 20}
	w := DSN(cfg, true)
	if !strings.HasPrefix(w, "file:/a b/x%3fy%23z%25.db?_pragma=busy_timeout(5000)&") || !strings.Contains(w, "_txlock=immediate") || !strings.Contains(w, "synchronous(NORMAL)") {
		t.Errorf("writer DSN %s", w)
	}
	if r := DSN(cfg, false); strings.Contains(r, "_txlock") || strings.Contains(r, "secure_delete") {
		t.Errorf("reader DSN %s", r)
	}
	cfg.ReadOnly = true
	if ro := DSN(cfg, true); !strings.Contains(ro, "?mode=rw&_pragma=query_only(1)&") || strings.Contains(ro, "_txlock") {
		t.Errorf("read-only DSN %s", ro)
	}
	cfg.Attach = true
	if a := DSN(cfg, true); !strings.Contains(a, "?mode=ro&") || strings.Contains(a, "query_only") || strings.Contains(a, "_txlock") {
		t.Errorf("attach DSN %s", a)
	}
}
