package projection_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/projection"
	"github.com/eventlite/eventlite/store"
)

// TestPostgresTableNames: on PostgreSQL a projection's table name longer
// than 49 bytes (its rebuild's shadow name would be cut into the live
// table's) or with capitals (folded in unquoted SQL) is a
// *TableNameError before any table is created; 49 bytes of lowercase
// are taken.
func TestPostgresTableNames(t *testing.T) {
	s := openPostgres(t)
	ctx := context.Background()
	ok := strings.Repeat("a", projection.MaxPostgresTableBytes)
	for _, c := range []struct {
		table string
		bad   bool
	}{
		{strings.Repeat("b", projection.MaxPostgresTableBytes+1), true},
		{"Orders", true},
		{ok, false},
	} {
		p := projection.Projection{
			Name:   "names",
			Tables: []projection.Table{{Name: c.table, Schema: `CREATE TABLE {table} (k BIGINT)`}},
			Apply:  func(context.Context, *projection.Tx, envelope.Event) error { return nil },
		}
		r, err := projection.NewRunner(s, p, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, err = r.CatchUp(ctx)
		var ne *projection.TableNameError
		switch {
		case c.bad && !errors.As(err, &ne):
			t.Errorf("table %q: CatchUp = %v, want a *TableNameError", c.table, err)
		case c.bad && (ne.Table != c.table || ne.Dialect != store.DialectPostgres):
			t.Errorf("table %q: error names %+v", c.table, ne)
		case !c.bad && err != nil:
			t.Errorf("table %q: %v", c.table, err)
		}
		if c.bad {
			var exists bool
			if err := s.View(ctx, func(rt *store.ReadTx) error {
				var err error
				exists, err = rt.TableExists(ctx, strings.ToLower(c.table))
				return err
			}); err != nil {
				t.Fatal(err)
			}
			if exists {
				t.Errorf("table %q was created", c.table)
			}
		}
	}
}
