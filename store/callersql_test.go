package store_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"modernc.org/sqlite"

	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/storetest"
)

// TestStatementErrorHint: a caller's statement that the engine refuses
// as text (a syntax error, an ambiguous column, an unknown column) fails
// with an error naming the engine and the statement's first line and
// pointing to docs/handler-sql.md, through Exec, Query and QueryRow of a
// Tx and of a View's ReadTx; errors.As still reaches the engine's own
// error. Another failure (a constraint) gets no hint.
func TestStatementErrorHint(t *testing.T) {
	for _, eng := range []struct {
		name, engine string
		open         func(testing.TB) *store.Store
		asEngine     func(error) bool
		// what each engine says for the three statements below
		syntax, ambiguous, unknown string
	}{
		{"sqlite", "SQLite", func(tb testing.TB) *store.Store { return storetest.MustOpen(tb, nil) },
			func(err error) bool { var e *sqlite.Error; return errors.As(err, &e) },
			`syntax error`, `ambiguous column name: n`, `no such column: nope`},
		{"postgres", "PostgreSQL", func(tb testing.TB) *store.Store {
			return openAddr(tb, storetest.PostgresSchema(tb, storetest.PostgresBase(tb)), nil)
		},
			func(err error) bool { var e *pgconn.PgError; return errors.As(err, &e) },
			`(SQLSTATE 42601)`, `column reference "n" is ambiguous (SQLSTATE 42702)`, `column "nope" does not exist (SQLSTATE 42703)`},
	} {
		t.Run(eng.name, func(t *testing.T) {
			s := eng.open(t)
			ctx := context.Background()
			if err := s.Update(ctx, func(tx *store.Tx) error {
				_, err := tx.ExecContext(ctx, `CREATE TABLE hint_a (k TEXT PRIMARY KEY, n BIGINT NOT NULL);
					CREATE TABLE hint_b (k TEXT PRIMARY KEY, n BIGINT NOT NULL)`)
				return err
			}); err != nil {
				t.Fatal(err)
			}
			cases := []struct{ query, first, engineSays string }{
				{"\n\t\tSELECT k,\n FROM hint_a", "SELECT k,", eng.syntax},
				{"SELECT n FROM hint_a, hint_b", "SELECT n FROM hint_a, hint_b", eng.ambiguous},
				{"SELECT nope FROM hint_a WHERE k = ?", "SELECT nope FROM hint_a WHERE k = ?", eng.unknown},
			}
			check := func(call, query, first, engineSays string, err error) {
				t.Helper()
				if err == nil {
					t.Errorf("%s(%q): no error", call, query)
					return
				}
				want := "statement failed on " + eng.engine + ": " + first + ": see docs/handler-sql.md (placeholders, upserts, types on both engines): "
				if !strings.HasPrefix(err.Error(), want) || !strings.Contains(err.Error(), engineSays) {
					t.Errorf("%s(%q):\n got %q\nwant %q... %q", call, query, err, want, engineSays)
				}
				if !eng.asEngine(err) {
					t.Errorf("%s(%q): errors.As does not reach the engine's error in %v", call, query, err)
				}
			}
			for _, c := range cases {
				err := s.Update(ctx, func(tx *store.Tx) error {
					_, err := tx.ExecContext(ctx, c.query, "k")
					check("Tx.ExecContext", c.query, c.first, c.engineSays, err)
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
				err = s.Update(ctx, func(tx *store.Tx) error {
					rows, err := tx.QueryContext(ctx, c.query, "k")
					if err == nil {
						rows.Close()
					}
					check("Tx.QueryContext", c.query, c.first, c.engineSays, err)
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
				err = s.Update(ctx, func(tx *store.Tx) error {
					var v any
					check("Tx.QueryRowContext", c.query, c.first, c.engineSays, tx.QueryRowContext(ctx, c.query, "k").Scan(&v))
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
				err = s.View(ctx, func(r *store.ReadTx) error {
					rows, err := r.QueryContext(ctx, c.query, "k")
					if err == nil {
						rows.Close()
					}
					check("ReadTx.QueryContext", c.query, c.first, c.engineSays, err)
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
				// A new snapshot: PostgreSQL aborts one at a failed
				// statement.
				err = s.View(ctx, func(r *store.ReadTx) error {
					var v any
					check("ReadTx.QueryRowContext", c.query, c.first, c.engineSays, r.QueryRowContext(ctx, c.query, "k").Scan(&v))
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
			}
			// Another failure: no hint.
			err := s.Update(ctx, func(tx *store.Tx) error {
				_, err := tx.ExecContext(ctx, `INSERT INTO hint_a (k, n) VALUES (?, NULL)`, "k")
				if err == nil || strings.Contains(err.Error(), "handler-sql") {
					t.Errorf("a NOT NULL failure: %v, want the engine's error alone", err)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			// No row is no statement error.
			err = s.View(ctx, func(r *store.ReadTx) error {
				var v any
				if err := r.QueryRowContext(ctx, `SELECT n FROM hint_a WHERE k = ?`, "none").Scan(&v); !errors.Is(err, sql.ErrNoRows) {
					t.Errorf("no row: %v, want sql.ErrNoRows", err)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}
