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

// schemaNames reads every table, index, view and trigger name in the
// store's file: what eventlite's migrations created.
func schemaNames(t *testing.T, s *store.Store) []string {
	t.Helper()
	var names []string
	err := s.Update(context.Background(), func(tx *store.Tx) error {
		rows, err := tx.QueryContext(context.Background(), `SELECT name FROM sqlite_master WHERE name IS NOT NULL`)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var n string
			if err := rows.Scan(&n); err != nil {
				return err
			}
			names = append(names, n)
		}
		return rows.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	return names
}

func tableProjection(table string) projection.Projection {
	return projection.Projection{
		Name:   "hijack",
		Tables: []projection.Table{{Name: table, Schema: `CREATE TABLE {table} (x TEXT)`}},
		Apply: func(ctx context.Context, tx *projection.Tx, e envelope.Event) error {
			_, err := tx.ExecContext(ctx, `DELETE FROM `+tx.Table(table))
			return err
		},
	}
}

// TestReservedTableNames: a projection may not declare a table named like
// any table or index of eventlite's own schema (in any case) or an SQLite
// internal name: Validate and NewRunner refuse it with ErrReservedTable,
// so createTables never skips an eventlite table and hands it to the
// handler.
func TestReservedTableNames(t *testing.T) {
	ctx := context.Background()
	s := storetest.MustOpen(t, nil)
	appendN(t, s, "victim", 3)
	names := schemaNames(t, s)
	if len(names) < 10 {
		t.Fatalf("schema has only %d names: %v", len(names), names)
	}
	names = append(names, "Events", "STREAMS", "sqlite_stat1", "SQLITE_whatever")
	for _, n := range names {
		p := tableProjection(n)
		if err := p.Validate(); !errors.Is(err, projection.ErrReservedTable) || !errors.Is(err, store.ErrReservedTable) {
			t.Errorf("Validate with table %q: %v, want ErrReservedTable", n, err)
		}
		if _, err := projection.NewRunner(s, p, nil); !errors.Is(err, projection.ErrReservedTable) {
			t.Errorf("NewRunner with table %q: %v, want ErrReservedTable", n, err)
		}
	}
	// The names eventlite does not use stay allowed, even close ones.
	for _, n := range []string{"orders", "events_by_day", "my_streams", "sqlitex"} {
		p := tableProjection(n)
		if err := p.Validate(); err != nil {
			t.Errorf("Validate with table %q: %v", n, err)
		}
	}
	// Nothing ran: the log is intact.
	n := 0
	for _, err := range s.ReadStream(ctx, "default", "victim", store.ReadStreamOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != 3 {
		t.Fatalf("victim stream has %d events, want 3", n)
	}
	p := tableProjection("streams")
	if err := p.Validate(); err == nil || !strings.Contains(err.Error(), "streams") {
		t.Fatalf("the error names the table: %v", err)
	}
}
