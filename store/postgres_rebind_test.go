package store_test

import (
	"context"
	"testing"

	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/storetest"
)

// TestRebindPostgres: on PostgreSQL a caller's ? placeholders are
// numbered $1..$n in an Update closure's Tx and in a View's ReadTx, and
// only outside string constants, quoted identifiers, comments and dollar
// quotes; a query written with $n is sent as written, so jsonb's ?, ?|
// and ?& operators work there, and ?? is a literal ? in a query without
// $n. The server answers each query: a wrong rebinding fails to parse or
// returns another value. The lexer's own table test is pgdriver's
// TestRebind.
func TestRebindPostgres(t *testing.T) {
	s := openAddr(t, storetest.PostgresSchema(t, storetest.PostgresBase(t)), nil)
	ctx := context.Background()
	cases := []struct {
		name  string
		query string
		args  []any
		want  string
	}{
		{"one", "SELECT ?::text", []any{"a"}, "a"},
		{"cast", "SELECT (?::int + ?::bigint)::text", []any{1, 2}, "3"},
		{"string", "SELECT 'a?b' || ?::text", []any{"c"}, "a?bc"},
		{"string with quote", "SELECT 'it''s ?' || ?::text", []any{"!"}, "it's ?!"},
		{"escape string", `SELECT E'\'?' || ?::text`, []any{"!"}, "'?!"},
		{"quoted identifier", `SELECT "a?b" FROM (SELECT ?::text AS "a?b") x`, []any{"v"}, "v"},
		{"line comment", "SELECT ?::text -- why?\n || ?::text", []any{"a", "b"}, "ab"},
		{"block comment", "SELECT /* ? /* ? */ ? */ ?::text", []any{"a"}, "a"},
		{"dollar quote", "SELECT $$?$$ || ?::text", []any{"a"}, "?a"},
		{"tagged dollar quote", "SELECT $x$ ? $x$ || ?::text", []any{"a"}, " ? a"},
		{"escaped mark", `SELECT ('{"a":1}'::jsonb ?? 'a')::text || ?::text`, []any{"!"}, "true!"},
		{"escaped any", `SELECT ('{"a":1}'::jsonb ??| array['b', ?::text])::text`, []any{"a"}, "true"},
		{"escaped all", `SELECT ('{"a":1}'::jsonb ??& array[?::text])::text`, []any{"b"}, "false"},
		{"numbered jsonb mark", "SELECT ($1::jsonb ? 'a')::text", []any{`{"a":1}`}, "true"},
		{"numbered jsonb any and all", "SELECT ($1::jsonb ?| array['a'] AND $2::jsonb ?& array['b'])::text", []any{`{"a":1}`, `{"b":2}`}, "true"},
	}
	err := s.Update(ctx, func(tx *store.Tx) error {
		for _, c := range cases {
			var got string
			if err := tx.QueryRowContext(ctx, c.query, c.args...).Scan(&got); err != nil {
				t.Errorf("%s: Tx.QueryRowContext(%q): %v", c.name, c.query, err)
				continue
			}
			if got != c.want {
				t.Errorf("%s: Tx.QueryRowContext(%q) = %q, want %q", c.name, c.query, got, c.want)
			}
			rows, err := tx.QueryContext(ctx, c.query, c.args...)
			if err != nil {
				t.Errorf("%s: Tx.QueryContext(%q): %v", c.name, c.query, err)
				continue
			}
			for rows.Next() {
				if err := rows.Scan(&got); err != nil || got != c.want {
					t.Errorf("%s: Tx.QueryContext(%q) = %q, %v, want %q", c.name, c.query, got, err, c.want)
				}
			}
			if err := rows.Close(); err != nil {
				t.Errorf("%s: %v", c.name, err)
			}
		}
		if _, err := tx.ExecContext(ctx, "CREATE TABLE rebound (k text PRIMARY KEY, n bigint NOT NULL)"); err != nil {
			return err
		}
		for range 2 {
			if _, err := tx.ExecContext(ctx, "INSERT INTO rebound AS t (k, n) VALUES (?, ?) ON CONFLICT (k) DO UPDATE SET n = t.n + ? -- '?'", "k?", 1, 10); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	err = s.View(ctx, func(r *store.ReadTx) error {
		for _, c := range cases {
			var got string
			if err := r.QueryRowContext(ctx, c.query, c.args...).Scan(&got); err != nil {
				t.Errorf("%s: ReadTx.QueryRowContext(%q): %v", c.name, c.query, err)
			} else if got != c.want {
				t.Errorf("%s: ReadTx.QueryRowContext(%q) = %q, want %q", c.name, c.query, got, c.want)
			}
		}
		var n int64
		rows, err := r.QueryContext(ctx, "SELECT n FROM rebound WHERE k = ? AND n > ?", "k?", 0)
		if err != nil {
			return err
		}
		defer rows.Close()
		if !rows.Next() {
			t.Fatal("ReadTx.QueryContext: no row")
		}
		if err := rows.Scan(&n); err != nil {
			return err
		}
		if n != 11 {
			t.Errorf("after the upsert twice: n = %d, want 11", n)
		}
		return rows.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
}
