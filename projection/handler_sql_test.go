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

// TestHandlerSQLHintQuarantined: a handler whose statement the engine
// refuses as text (here PostgreSQL's ambiguous column of an upsert
// without its table alias, SQLite's unknown column) is quarantined with
// the hint: the engine, the statement's first line and the docs page;
// doctor's quarantined finding points to the page too.
func TestHandlerSQLHintQuarantined(t *testing.T) {
	for _, eng := range []struct {
		name, engine, says string
		open               func(testing.TB) *store.Store
		stmt               string
	}{
		{"sqlite", "SQLite", "no such column: nope", func(tb testing.TB) *store.Store { return storetest.MustOpen(tb, nil) },
			`UPDATE {table} SET nope = 1 WHERE k = ?`},
		{"postgres", "PostgreSQL", `column reference "n" is ambiguous (SQLSTATE 42702)`, openPostgres,
			`INSERT INTO {table} (k, n) VALUES (?, 1)
				ON CONFLICT (k) DO UPDATE SET n = n + 1`},
	} {
		t.Run(eng.name, func(t *testing.T) {
			ctx := context.Background()
			s := eng.open(t)
			p := projection.Projection{
				Name:   "hinted",
				Types:  []string{"thing.happened"},
				Tables: []projection.Table{{Name: "hinted", Schema: `CREATE TABLE {table} (k TEXT PRIMARY KEY, n BIGINT NOT NULL)`}},
				Apply: func(ctx context.Context, tx *projection.Tx, e envelope.Event) error {
					_, err := tx.ExecContext(ctx, strings.ReplaceAll(eng.stmt, "{table}", tx.Table("hinted")), e.Stream)
					return err
				},
			}
			e, err := envelope.New("thing.happened", map[string]int{"n": 1})
			if err != nil {
				t.Fatal(err)
			}
			e.Source = "/test"
			if _, err := s.Append(ctx, "default", "thing-1", store.NoStream, e); err != nil {
				t.Fatal(err)
			}
			r, err := projection.NewRunner(s, p, &projection.RunnerOptions{MaxAttempts: 1})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := r.CatchUp(ctx); !errors.Is(err, projection.ErrStopped) {
				t.Fatalf("CatchUp: %v, want ErrStopped", err)
			}
			q, err := projection.Quarantine(s).Events(ctx, projection.QuarantineFilter{Open: true})
			if err != nil {
				t.Fatal(err)
			}
			if len(q) != 1 {
				t.Fatalf("%d quarantined, want 1", len(q))
			}
			first := strings.SplitN(strings.ReplaceAll(eng.stmt, "{table}", "hinted"), "\n", 2)[0]
			want := "statement failed on " + eng.engine + ": " + first + ": see docs/handler-sql.md"
			if !strings.Contains(q[0].Error, want) || !strings.Contains(q[0].Error, eng.says) {
				t.Errorf("quarantine entry's error:\n got %q\nwant it to hold %q and %q", q[0].Error, want, eng.says)
			}
			findings, err := s.Diagnose(ctx, store.DiagnoseOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var detail string
			for _, f := range findings {
				if f.Kind == "quarantined" {
					detail = f.Detail
				}
			}
			if want := "1 failed on a statement the engine refused (a syntax error, an ambiguous or unknown column: often SQL written for the other engine): see docs/handler-sql.md"; !strings.Contains(detail, want) {
				t.Errorf("doctor's quarantined finding:\n got %q\nwant it to hold %q", detail, want)
			}
		})
	}
}
