package replay_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/eventlite/eventlite/projection"
	"github.com/eventlite/eventlite/replay"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/storetest"
)

// TestRebuildWithoutDDLForTheDialect: a rebuild of a projection one of
// whose tables has DDL for other dialects only stops with a
// *projection.MissingSchemaError naming the table and the store's
// dialect, before it creates a shadow or records a rebuild; the live read
// model is untouched and a rebuild with the DDL declared goes on.
func TestRebuildWithoutDDLForTheDialect(t *testing.T) {
	ctx := context.Background()
	s := storetest.MustOpen(t, nil)
	appendRandom(t, s, rand.New(rand.NewPCG(11, 12)), 40)
	p := ledger("ledger", nil, nil)
	catchUp(t, s, p)
	before := snapshot(t, s, p)

	noSQLite := p
	noSQLite.Tables = append([]projection.Table(nil), p.Tables...)
	noSQLite.Tables[1].Schemas = map[store.Dialect]string{store.DialectPostgres: noSQLite.Tables[1].Schema}
	noSQLite.Tables[1].Schema = ""
	_, err := replay.Rebuild(ctx, s, noSQLite, nil)
	var me *projection.MissingSchemaError
	if !errors.As(err, &me) || me.Table != p.Tables[1].Name || me.Dialect != store.DialectSQLite {
		t.Fatalf("Rebuild = %v, want a *MissingSchemaError for %s on sqlite", err, p.Tables[1].Name)
	}
	if _, found, err := projection.Rebuilds(s).Load(ctx, "ledger"); err != nil || found {
		t.Fatalf("a rebuild was recorded: %v, %v", found, err)
	}
	if sh := shadowTables(t, s); len(sh) != 0 {
		t.Fatalf("shadow tables left: %v", sh)
	}
	if diff := cmp.Diff(before, snapshot(t, s, p)); diff != "" {
		t.Fatalf("live read model changed (-before +after):\n%s", diff)
	}
	// The DDL for SQLite in Schemas: the rebuild runs.
	withSQLite := noSQLite
	withSQLite.Tables[1].Schemas = map[store.Dialect]string{store.DialectSQLite: p.Tables[1].Schema}
	if res, err := replay.Rebuild(ctx, s, withSQLite, nil); err != nil || !res.Swapped {
		t.Fatalf("Rebuild = %+v, %v", res, err)
	}
	checkLedgerIsFold(t, s, "ledger", nil)
}
