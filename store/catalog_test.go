package store_test

import (
	"context"
	"testing"

	"github.com/eventlite/eventlite/internal/inside"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/storetest"
)

// TestDialect: a store on SQLite says so in its write and read
// transactions; only the two dialects are known.
func TestDialect(t *testing.T) {
	ctx := context.Background()
	s := storetest.MustOpen(t, nil)
	var got store.Dialect
	if err := s.Update(ctx, func(tx *store.Tx) error { got = tx.Dialect(); return nil }); err != nil {
		t.Fatal(err)
	}
	if got != store.DialectSQLite {
		t.Fatalf("tx.Dialect() = %q, want %q", got, store.DialectSQLite)
	}
	if err := s.View(ctx, func(rt *store.ReadTx) error { got = rt.Dialect(); return nil }); err != nil {
		t.Fatal(err)
	}
	if got != store.DialectSQLite {
		t.Fatalf("rt.Dialect() = %q, want %q", got, store.DialectSQLite)
	}
	for d, want := range map[store.Dialect]bool{store.DialectSQLite: true, store.DialectPostgres: true, "": false, "SQLite": false, "mysql": false} {
		if d.Known() != want {
			t.Errorf("Dialect(%q).Known() = %v, want %v", d, !want, want)
		}
	}
}

// TestTableExists: the write transaction sees its own CREATE and DROP, a
// read snapshot sees what was committed, and a name is matched as data,
// never run as SQL.
func TestTableExists(t *testing.T) {
	ctx := context.Background()
	s := storetest.MustOpen(t, nil)
	hostile := []string{`rm' OR '1'='1`, `rm"; DROP TABLE events; --`, `x') OR 1=1 --`}
	if err := s.Update(ctx, func(tx *store.Tx) error {
		for _, name := range append([]string{"rm"}, hostile...) {
			if ok, err := tx.TableExists(ctx, name); err != nil || ok {
				t.Errorf("before CREATE: TableExists(%q) = %v, %v", name, ok, err)
			}
		}
		if _, err := tx.ExecContext(ctx, `CREATE TABLE rm (k TEXT)`); err != nil {
			return err
		}
		if ok, err := tx.TableExists(ctx, "rm"); err != nil || !ok {
			t.Errorf("after CREATE: TableExists = %v, %v", ok, err)
		}
		for _, name := range hostile {
			if ok, err := tx.TableExists(ctx, name); err != nil || ok {
				t.Errorf("TableExists(%q) = %v, %v", name, ok, err)
			}
		}
		if ok, err := tx.TableExists(ctx, "events"); err != nil || !ok {
			t.Errorf("TableExists(events) = %v, %v", ok, err)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	view := func(name string) bool {
		t.Helper()
		var ok bool
		if err := s.View(ctx, func(rt *store.ReadTx) (err error) { ok, err = rt.TableExists(ctx, name); return err }); err != nil {
			t.Fatal(err)
		}
		return ok
	}
	if !view("rm") || view("gone") || view(hostile[0]) {
		t.Fatalf("read snapshot: rm %v, gone %v, hostile %v", view("rm"), view("gone"), view(hostile[0]))
	}
	if err := s.Update(ctx, func(tx *store.Tx) error {
		if err := store.Bookkeeping(inside.Key{}, tx).DropTable(ctx, "rm"); err != nil {
			return err
		}
		if ok, err := tx.TableExists(ctx, "rm"); err != nil || ok {
			t.Errorf("after DROP: TableExists = %v, %v", ok, err)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if view("rm") {
		t.Fatal("a dropped table exists in a later snapshot")
	}
	var kept *store.ReadTx
	if err := s.View(ctx, func(rt *store.ReadTx) error { kept = rt; return nil }); err != nil {
		t.Fatal(err)
	}
	if _, err := kept.TableExists(ctx, "events"); err == nil {
		t.Fatal("TableExists on a ReadTx past its View returned no error")
	}
}
