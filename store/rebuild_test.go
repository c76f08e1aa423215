package store_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/internal/inside"
	"github.com/eventlite/eventlite/internal/projrow"
	"github.com/eventlite/eventlite/projection"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/storetest"
)

// execAll runs statements in one Update.
func execAll(t *testing.T, s *store.Store, stmts ...string) {
	t.Helper()
	err := s.Update(context.Background(), func(tx *store.Tx) error {
		for _, q := range stmts {
			if _, err := tx.ExecContext(context.Background(), q); err != nil {
				return fmt.Errorf("%s: %w", q, err)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func compareTables(t *testing.T, s *store.Store, live, shadow string) store.TableDiff {
	t.Helper()
	var d store.TableDiff
	err := s.Update(context.Background(), func(tx *store.Tx) error {
		var err error
		d, err = store.Bookkeeping(inside.Key{}, tx).CompareTables(context.Background(), live, shadow)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestCompareTablesTx(t *testing.T) {
	for _, c := range []struct {
		name   string
		schema string // with %s for the table name
		live   []string
		shadow []string
		want   store.TableDiff
	}{
		{
			name:   "equal",
			schema: `CREATE TABLE %s (id INTEGER PRIMARY KEY, v TEXT)`,
			live:   []string{`(1, 'a')`, `(2, 'b')`},
			shadow: []string{`(1, 'a')`, `(2, 'b')`},
		},
		{
			name:   "missing extra different",
			schema: `CREATE TABLE %s (id INTEGER PRIMARY KEY, v TEXT, n INTEGER)`,
			live:   []string{`(1, 'a', 1)`, `(2, 'b', 2)`, `(4, 'x', 4)`},
			shadow: []string{`(1, 'a', 1)`, `(2, 'b', 3)`, `(3, 'c', 3)`},
			want:   store.TableDiff{Missing: 1, Extra: 1, Different: 1},
		},
		{
			name:   "NULL is a value like any other",
			schema: `CREATE TABLE %s (id INTEGER PRIMARY KEY, v TEXT)`,
			live:   []string{`(1, NULL)`, `(2, 'b')`, `(3, NULL)`},
			shadow: []string{`(1, NULL)`, `(2, NULL)`, `(3, 'c')`},
			want:   store.TableDiff{Different: 2},
		},
		{
			name:   "composite key, without rowid",
			schema: `CREATE TABLE %s (tenant TEXT, stream TEXT, n INTEGER, PRIMARY KEY (stream, tenant)) WITHOUT ROWID`,
			live:   []string{`('t1', 's', 1)`, `('t2', 's', 2)`},
			shadow: []string{`('t1', 's', 1)`, `('t2', 's', 5)`, `('t3', 's', 1)`},
			want:   store.TableDiff{Missing: 1, Different: 1},
		},
		{
			name:   "only key columns",
			schema: `CREATE TABLE %s (a TEXT, b TEXT, PRIMARY KEY (a, b))`,
			live:   []string{`('x', 'y')`},
			shadow: []string{`('x', 'z')`},
			want:   store.TableDiff{Missing: 1, Extra: 1},
		},
		{
			name:   "no primary key: whole rows as multisets",
			schema: `CREATE TABLE %s (a TEXT, n INTEGER)`,
			live:   []string{`('x', 1)`, `('x', 1)`, `('y', 2)`, `(NULL, 3)`},
			shadow: []string{`('x', 1)`, `('y', 2)`, `('y', 2)`, `(NULL, 3)`, `('z', 9)`},
			want:   store.TableDiff{Missing: 2, Extra: 1},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := storetest.MustOpen(t, nil)
			stmts := []string{fmt.Sprintf(c.schema, "live"), fmt.Sprintf(c.schema, "shadow")}
			for _, r := range c.live {
				stmts = append(stmts, `INSERT INTO live VALUES `+r)
			}
			for _, r := range c.shadow {
				stmts = append(stmts, `INSERT INTO shadow VALUES `+r)
			}
			execAll(t, s, stmts...)
			if diff := cmp.Diff(c.want, compareTables(t, s, "live", "shadow")); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}
}

func TestCompareTablesTxShapes(t *testing.T) {
	s := storetest.MustOpen(t, nil)
	execAll(t, s,
		`CREATE TABLE shadow (id INTEGER PRIMARY KEY, v TEXT)`,
		`INSERT INTO shadow VALUES (1, 'a'), (2, 'b')`,
		`CREATE TABLE other (id INTEGER PRIMARY KEY, v TEXT, w TEXT)`,
		`INSERT INTO other VALUES (1, 'a', 'x')`,
	)
	// No live table yet (the projection never ran): every row is missing.
	if d := compareTables(t, s, "live", "shadow"); d != (store.TableDiff{Missing: 2}) {
		t.Errorf("no live table: %+v", d)
	}
	// Another schema: rows cannot be matched.
	if d := compareTables(t, s, "other", "shadow"); d != (store.TableDiff{Missing: 2, Extra: 1, SchemaDiffers: true}) {
		t.Errorf("other columns: %+v", d)
	}
	err := s.Update(context.Background(), func(tx *store.Tx) error {
		_, err := store.Bookkeeping(inside.Key{}, tx).CompareTables(context.Background(), "other", "nosuch")
		return err
	})
	if !errors.Is(err, store.ErrNotFound) {
		t.Errorf("no shadow table: %v, want ErrNotFound", err)
	}
}

func TestDropAndRenameTable(t *testing.T) {
	ctx := context.Background()
	s := storetest.MustOpen(t, nil)
	// Names that need quoting.
	from, to := `weird "name" x`, `renamed table`
	execAll(t, s,
		`CREATE TABLE "weird ""name"" x" (id INTEGER PRIMARY KEY)`,
		`CREATE INDEX "weird ""name"" x_by_id" ON "weird ""name"" x" (id)`,
	)
	err := s.Update(ctx, func(tx *store.Tx) error { return store.Bookkeeping(inside.Key{}, tx).RenameTable(ctx, from, to) })
	if err != nil {
		t.Fatal(err)
	}
	err = s.Update(ctx, func(tx *store.Tx) error {
		for name, want := range map[string]bool{from: false, to: true} {
			if ok, err := tx.TableExists(ctx, name); err != nil || ok != want {
				return fmt.Errorf("table %q exists = %v (%v), want %v", name, ok, err, want)
			}
		}
		if err := store.Bookkeeping(inside.Key{}, tx).DropTable(ctx, to); err != nil {
			return err
		}
		if err := store.Bookkeeping(inside.Key{}, tx).DropTable(ctx, "never existed"); err != nil {
			return fmt.Errorf("drop of a missing table: %w", err)
		}
		if ok, err := tx.TableExists(ctx, to); err != nil || ok {
			return fmt.Errorf("dropped table still exists (%v)", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// eventlite's own tables are refused, whatever the case.
	for _, name := range []string{"events", "Outbox", "checkpoints", "rebuilds", "sqlite_sequence"} {
		err := s.Update(ctx, func(tx *store.Tx) error { return store.Bookkeeping(inside.Key{}, tx).DropTable(ctx, name) })
		if !errors.Is(err, store.ErrReservedTable) {
			t.Errorf("drop %s: %v, want ErrReservedTable", name, err)
		}
		err = s.Update(ctx, func(tx *store.Tx) error { return store.Bookkeeping(inside.Key{}, tx).RenameTable(ctx, name, "x") })
		if !errors.Is(err, store.ErrReservedTable) {
			t.Errorf("rename %s: %v, want ErrReservedTable", name, err)
		}
	}
	err = s.Update(ctx, func(tx *store.Tx) error { return store.Bookkeeping(inside.Key{}, tx).RenameTable(ctx, "x", "events") })
	if !errors.Is(err, store.ErrReservedTable) {
		t.Errorf("rename onto events: %v, want ErrReservedTable", err)
	}
}

func TestRebuildRow(t *testing.T) {
	ctx := context.Background()
	s := storetest.MustOpen(t, nil)
	if _, ok, err := projection.Rebuilds(s).Load(ctx, "p"); ok || err != nil {
		t.Fatalf("LoadRebuild before any = %v, %v", ok, err)
	}
	var gens []int64
	err := s.Update(ctx, func(tx *store.Tx) error {
		for range 3 {
			g, err := store.Bookkeeping(inside.Key{}, tx).NewRebuildGeneration(ctx, "p")
			if err != nil {
				return err
			}
			gens = append(gens, g)
		}
		g, err := store.Bookkeeping(inside.Key{}, tx).NewRebuildGeneration(ctx, "q")
		gens = append(gens, g)
		if err != nil {
			return err
		}
		return store.Bookkeeping(inside.Key{}, tx).SaveRebuild(ctx, projrow.Rebuild{Projection: "p", Generation: 3, Checkpoint: 10, Watermark: 20, Applied: 7})
	})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]int64{1, 2, 3, 1}, gens); diff != "" {
		t.Errorf("generations (-want +got)\n%s", diff)
	}
	rb, ok, err := projection.Rebuilds(s).Load(ctx, "p")
	if !ok || err != nil || rb.Generation != 3 || rb.Checkpoint != 10 || rb.Watermark != 20 || rb.Applied != 7 || rb.StartedAt.IsZero() || rb.UpdatedAt.IsZero() {
		t.Fatalf("LoadRebuild = %+v, %v, %v", rb, ok, err)
	}
	err = s.Update(ctx, func(tx *store.Tx) error {
		rb.Checkpoint = 15
		if err := store.Bookkeeping(inside.Key{}, tx).SaveRebuild(ctx, projrow.Rebuild(rb)); err != nil {
			return err
		}
		got, ok, err := store.Bookkeeping(inside.Key{}, tx).LoadRebuild(ctx, "p")
		if err != nil || !ok || got.Checkpoint != 15 || !got.StartedAt.Equal(rb.StartedAt) {
			return fmt.Errorf("tx.LoadRebuild after save = %+v %v %v", got, ok, err)
		}
		return store.Bookkeeping(inside.Key{}, tx).DeleteRebuild(ctx, "p")
	})
	if err != nil {
		t.Fatal(err)
	}
	if all, err := projection.Rebuilds(s).List(ctx); err != nil || len(all) != 0 {
		t.Errorf("Rebuilds after delete = %+v, %v", all, err)
	}
	// The generation outlives the row.
	err = s.Update(ctx, func(tx *store.Tx) error {
		g, err := store.Bookkeeping(inside.Key{}, tx).NewRebuildGeneration(ctx, "p")
		if err == nil && g != 4 {
			err = fmt.Errorf("generation after delete = %d, want 4", g)
		}
		return err
	})
	if err != nil {
		t.Error(err)
	}
}

func TestCountEvents(t *testing.T) {
	ctx := context.Background()
	s := storetest.MustOpen(t, nil)
	var evs []envelope.Event
	for i := range 30 {
		e, _ := envelope.New([]string{"a", "b", "c"}[i%3], i)
		e.Source = "/t"
		evs = append(evs, e)
	}
	if _, err := s.Append(ctx, "default", "s", store.Any, evs...); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		after, upto int64
		types       []string
		want        int64
	}{
		{0, 30, nil, 30},           // most of the log: whole count minus the rest
		{0, 100, nil, 30},          // past the head
		{5, 10, nil, 5},            // a small range
		{1, 29, nil, 28},           // most of the log, both ends cut
		{0, 30, []string{"a"}, 10}, // positions 1, 4, ... are "a"
		{0, 30, []string{"a", "c"}, 20},
		{3, 9, []string{"b"}, 2}, // positions 5 and 8
		{10, 10, nil, 0},
	} {
		n, err := projection.Rebuilds(s).CountEvents(ctx, c.after, c.upto, c.types)
		if err != nil || n != c.want {
			t.Errorf("CountEvents(%d, %d, %q) = %d, %v; want %d", c.after, c.upto, c.types, n, err, c.want)
		}
	}
}

func TestViewIsASnapshotAndReadOnly(t *testing.T) {
	ctx := context.Background()
	s := storetest.MustOpen(t, nil)
	execAll(t, s, `CREATE TABLE v (n INTEGER)`, `INSERT INTO v VALUES (1)`)
	err := s.View(ctx, func(rt *store.ReadTx) error {
		var before int
		if err := rt.QueryRowContext(ctx, `SELECT count(*) FROM v`).Scan(&before); err != nil {
			return err
		}
		// A commit meanwhile is not seen inside the snapshot.
		execAll(t, s, `INSERT INTO v VALUES (2)`)
		var after int
		if err := rt.QueryRowContext(ctx, `SELECT count(*) FROM v`).Scan(&after); err != nil {
			return err
		}
		if before != 1 || after != 1 {
			return fmt.Errorf("counts %d then %d in one snapshot, want 1 and 1", before, after)
		}
		rows, err := rt.QueryContext(ctx, `INSERT INTO v VALUES (3) RETURNING n`)
		if err == nil {
			for rows.Next() {
			}
			err = rows.Err()
			rows.Close()
		}
		if err == nil {
			return errors.New("a write inside View succeeded")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// The connection went back to the pool writable-as-before (query_only
	// off): a later View still works, and sees both rows.
	err = s.View(ctx, func(rt *store.ReadTx) error {
		var n int
		if err := rt.QueryRowContext(ctx, `SELECT count(*) FROM v`).Scan(&n); err != nil {
			return err
		}
		if n != 2 {
			return fmt.Errorf("count %d, want 2", n)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
