package projection_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/projection"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/storetest"
)

// viaProjection writes one row per event into the table "<name>_rows",
// whose DDL the test gives; the column via's default tells which DDL
// created the table.
func viaProjection(name string, schema string, schemas map[store.Dialect]string) projection.Projection {
	table := name + "_rows"
	return projection.Projection{
		Name: name,
		Tables: []projection.Table{
			{Name: name + "_first", Schema: `CREATE TABLE {table} (k INTEGER)`},
			{Name: table, Schema: schema, Schemas: schemas},
		},
		Apply: func(ctx context.Context, tx *projection.Tx, e envelope.Event) error {
			_, err := tx.ExecContext(ctx, `INSERT INTO `+tx.Table(table)+` (position) VALUES (?)`, e.Position)
			return err
		},
	}
}

func viaDDL(via string) string {
	return `CREATE TABLE {table} (position INTEGER PRIMARY KEY, via TEXT NOT NULL DEFAULT '` + via + `')`
}

// TestTableDDLPerDialect: on SQLite a table's Schemas[sqlite] entry
// creates it when there is one, the default Schema otherwise (another
// dialect's entry is ignored); a table with DDL for other dialects only is
// a *MissingSchemaError naming the projection, the table and the dialect,
// and nothing is stored: no table (not even the tables declared before
// it), no checkpoint, no projection record.
func TestTableDDLPerDialect(t *testing.T) {
	ctx := context.Background()
	pg := `CREATE TABLE {table} (position BIGINT PRIMARY KEY, via TEXT NOT NULL DEFAULT 'postgres')`
	for _, c := range []struct {
		name    string
		schema  string
		schemas map[store.Dialect]string
		via     string // "" for the missing-DDL error
	}{
		{"dflt", viaDDL("default"), nil, "default"},
		{"dfltpg", viaDDL("default"), map[store.Dialect]string{store.DialectPostgres: pg}, "default"},
		{"over", viaDDL("default"), map[store.Dialect]string{store.DialectSQLite: viaDDL("sqlite"), store.DialectPostgres: pg}, "sqlite"},
		{"only", "", map[store.Dialect]string{store.DialectSQLite: viaDDL("sqlite")}, "sqlite"},
		{"missing", "", map[store.Dialect]string{store.DialectPostgres: pg}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := storetest.MustOpen(t, nil)
			appendN(t, s, "a", 3)
			p := viaProjection(c.name, c.schema, c.schemas)
			r, err := projection.NewRunner(s, p, nil)
			if err != nil {
				t.Fatal(err)
			}
			_, err = r.CatchUp(ctx)
			if c.via == "" {
				var me *projection.MissingSchemaError
				if !errors.As(err, &me) || !errors.Is(err, projection.ErrMissingSchema) {
					t.Fatalf("CatchUp = %v, want a *MissingSchemaError", err)
				}
				if me.Projection != c.name || me.Table != c.name+"_rows" || me.Dialect != store.DialectSQLite {
					t.Fatalf("error names %+v", me)
				}
				for _, want := range []string{c.name + "_rows", "sqlite", "Schemas"} {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("error %q does not name %q", err, want)
					}
				}
				if err := s.View(ctx, func(rt *store.ReadTx) error {
					for _, tb := range []string{c.name + "_first", c.name + "_rows"} {
						if ok, err := rt.TableExists(ctx, tb); err != nil || ok {
							t.Errorf("table %s exists (%v) after the error", tb, err)
						}
					}
					return nil
				}); err != nil {
					t.Fatal(err)
				}
				if cp, err := projection.Records(s).Checkpoint(ctx, c.name); err != nil || cp != 0 {
					t.Errorf("checkpoint %d, %v", cp, err)
				}
				if _, err := projection.Records(s).Get(ctx, c.name); !errors.Is(err, store.ErrNotFound) {
					t.Errorf("projection record: %v, want ErrNotFound", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var vias []string
			if err := s.View(ctx, func(rt *store.ReadTx) error {
				rows, err := rt.QueryContext(ctx, `SELECT via FROM `+c.name+`_rows ORDER BY position`)
				if err != nil {
					return err
				}
				defer rows.Close()
				for rows.Next() {
					var v string
					if err := rows.Scan(&v); err != nil {
						return err
					}
					vias = append(vias, v)
				}
				return rows.Err()
			}); err != nil {
				t.Fatal(err)
			}
			if len(vias) != 3 || vias[0] != c.via || vias[2] != c.via {
				t.Fatalf("rows made by %v, want 3 by the %s DDL", vias, c.via)
			}
		})
	}
}

// TestTableDDLValidation: DDL per dialect is checked like Schema: every
// entry uses {table}, its dialect is one eventlite knows, and a table has
// some DDL.
func TestTableDDLValidation(t *testing.T) {
	apply := func(context.Context, *projection.Tx, envelope.Event) error { return nil }
	for name, c := range map[string]struct {
		tb   projection.Table
		want string // in the error; "" for valid
	}{
		"default only":   {projection.Table{Name: "t", Schema: viaDDL("x")}, ""},
		"per dialect":    {projection.Table{Name: "t", Schemas: map[store.Dialect]string{store.DialectPostgres: viaDDL("x")}}, ""},
		"no DDL":         {projection.Table{Name: "t"}, "DDL that uses {table}"},
		"empty Schemas":  {projection.Table{Name: "t", Schemas: map[store.Dialect]string{}}, "DDL that uses {table}"},
		"no {table}":     {projection.Table{Name: "t", Schema: viaDDL("x"), Schemas: map[store.Dialect]string{store.DialectSQLite: "CREATE TABLE t (k)"}}, `Schemas["sqlite"]`},
		"unknown":        {projection.Table{Name: "t", Schemas: map[store.Dialect]string{"mysql": viaDDL("x")}}, `dialect "mysql"`},
		"default broken": {projection.Table{Name: "t", Schema: "CREATE TABLE t (k)", Schemas: map[store.Dialect]string{store.DialectSQLite: viaDDL("x")}}, "DDL that uses {table}"},
	} {
		p := projection.Projection{Name: "p", Apply: apply, Tables: []projection.Table{c.tb}}
		err := p.Validate()
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: %v, want an error about %s", name, err, c.want)
		}
	}
}
