package pgdriver

import (
	"strconv"
	"strings"
	"testing"
)

// rebindCases are the queries the rebinding is tested on by the lexer
// alone; store's TestRebindPostgres runs the same shapes on the server.
var rebindCases = []struct{ name, in, want string }{
	{"none", "SELECT 1", "SELECT 1"},
	{"one", "SELECT ?", "SELECT $1"},
	{"several", "INSERT INTO t (a, b, c) VALUES (?, ?,?)", "INSERT INTO t (a, b, c) VALUES ($1, $2,$3)"},
	{"ten and more", "SELECT ?,?,?,?,?,?,?,?,?,?,?", "SELECT $1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11"},
	{"cast", "SELECT ?::int + ?::bigint", "SELECT $1::int + $2::bigint"},
	{"string", "SELECT 'a?b', ?", "SELECT 'a?b', $1"},
	{"string with quote", "SELECT 'it''s ?', ?", "SELECT 'it''s ?', $1"},
	{"escape string", `SELECT E'\'?', ?`, `SELECT E'\'?', $1`},
	{"quoted identifier", `SELECT ? AS "a?b"`, `SELECT $1 AS "a?b"`},
	{"line comment", "SELECT ? -- why?\n, ?", "SELECT $1 -- why?\n, $2"},
	{"block comment", "SELECT /* ? /* ? */ ? */ ?", "SELECT /* ? /* ? */ ? */ $1"},
	{"dollar quote", "SELECT $$?$$, ?", "SELECT $$?$$, $1"},
	{"tagged dollar quote", "SELECT $x$ ? $x$, ?", "SELECT $x$ ? $x$, $1"},
	{"escaped mark", "SELECT '{\"a\":1}'::jsonb ?? 'a' AND ?::text = 'x'", "SELECT '{\"a\":1}'::jsonb ? 'a' AND $1::text = 'x'"},
	{"escaped any", "SELECT '{\"a\":1}'::jsonb ??| array['a', ?]", "SELECT '{\"a\":1}'::jsonb ?| array['a', $1]"},
	{"escaped all", "SELECT '{\"a\":1}'::jsonb ??& array[?]", "SELECT '{\"a\":1}'::jsonb ?& array[$1]"},
	{"numbered unchanged", "SELECT $1::jsonb ? 'a'", "SELECT $1::jsonb ? 'a'"},
	{"numbered with any", "SELECT $1::jsonb ?| array['a'] AND $2::jsonb ?& array['b']", "SELECT $1::jsonb ?| array['a'] AND $2::jsonb ?& array['b']"},
	{"numbered keeps double mark", "SELECT $1::jsonb ?? 'a'", "SELECT $1::jsonb ?? 'a'"},
	{"dollar in string is no parameter", "SELECT '$1', ?", "SELECT '$1', $1"},
	{"dollar in comment is no parameter", "SELECT ? /* $1 */", "SELECT $1 /* $1 */"},
	{"dollar in a word is no parameter", "SELECT ? AS a$1", "SELECT $1 AS a$1"},
	{"mark only in string", "SELECT '?'", "SELECT '?'"},
}

func TestRebind(t *testing.T) {
	for _, c := range rebindCases {
		t.Run(c.name, func(t *testing.T) {
			if got := (Exec{}).Rebind(c.in); got != c.want {
				t.Errorf("Rebind(%q)\n got %q\nwant %q", c.in, got, c.want)
			}
			if got := rebind(c.in); got != c.want {
				t.Errorf("rebind(%q) uncached\n got %q\nwant %q", c.in, got, c.want)
			}
		})
	}
}

// TestRebindNoAlloc: a query without ? and a cached one cost no
// allocation.
func TestRebindNoAlloc(t *testing.T) {
	plain := "INSERT INTO t (a) VALUES ($1)"
	marked := "INSERT INTO t (a) VALUES (?)"
	_ = Exec{}.Rebind(marked)
	for _, q := range []string{plain, marked} {
		if n := testing.AllocsPerRun(100, func() { _ = Exec{}.Rebind(q) }); n != 0 {
			t.Errorf("Rebind(%q): %v allocations per call, want 0", q, n)
		}
	}
}

func TestRebindCacheBounded(t *testing.T) {
	for i := 0; i < 3*rebindCacheSize; i++ {
		q := "SELECT ?, " + string(rune('a'+i%26)) + "_" + strconv.Itoa(i)
		if got, want := (Exec{}).Rebind(q), "SELECT $1, "+string(rune('a'+i%26))+"_"+strconv.Itoa(i); got != want {
			t.Fatalf("Rebind(%q) = %q, want %q", q, got, want)
		}
	}
	rebinds.mu.RLock()
	n := len(rebinds.m)
	rebinds.mu.RUnlock()
	if n > rebindCacheSize {
		t.Errorf("cache holds %d queries, bound %d", n, rebindCacheSize)
	}
}

// BenchmarkRebind: a query without ?, a cached one, and the lexing of one
// not cached (what the cache saves), on the same upsert.
func BenchmarkRebind(b *testing.B) {
	const marked = `INSERT INTO balances AS t (tenant, account, owner, balance) VALUES (?, ?, ?, ?)
		ON CONFLICT (tenant, account) DO UPDATE SET balance = t.balance + excluded.balance`
	plain := strings.NewReplacer("(?, ?, ?, ?)", "($1, $2, $3, $4)").Replace(marked)
	b.Run("no-mark", func(b *testing.B) {
		for b.Loop() {
			_ = Exec{}.Rebind(plain)
		}
	})
	b.Run("cached", func(b *testing.B) {
		for b.Loop() {
			_ = Exec{}.Rebind(marked)
		}
	})
	b.Run("lexed", func(b *testing.B) {
		for b.Loop() {
			_ = rebind(marked)
		}
	})
}
