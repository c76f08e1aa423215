package pgdriver

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/eventlite/eventlite/store/internal/pgaddr"
)

// TestQuoteLiteral: BeginSQL's channel literal reads back as the string
// it quotes, quotes and backslashes included, whether or not the session
// takes backslashes in plain literals as escapes.
func TestQuoteLiteral(t *testing.T) {
	a, err := pgaddr.ParseAddress(testURL(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	c, err := pgx.Connect(ctx, a.ConnString)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	for _, scs := range []string{"on", "off"} {
		if _, err := c.Exec(ctx, "SET standard_conforming_strings = "+scs); err != nil {
			t.Fatal(err)
		}
		for _, s := range []string{"eventlite_orders", "", "a'b", `a\b`, `a\'b`, `'\\'`, `\`, "é'\x01"} {
			// A simple query, as Writer.Begin sends (pgx's own simple
			// protocol path refuses standard_conforming_strings off).
			res, err := c.PgConn().Exec(ctx, "SELECT "+quoteLiteral(s)).ReadAll()
			got := ""
			if err == nil && len(res) == 1 && len(res[0].Rows) == 1 {
				got = string(res[0].Rows[0][0])
			}
			if err != nil || got != s {
				t.Errorf("standard_conforming_strings=%s: %s read back as %q, %v; want %q", scs, quoteLiteral(s), got, err, s)
			}
		}
	}
}

// TestBeginSQL: the statement a write transaction begins with holds the
// channel as a literal and no parameter.
func TestBeginSQL(t *testing.T) {
	q := BeginSQL(`"s"`, "eventlite_s")
	if strings.Contains(q, "$") || !strings.Contains(q, "pg_notify('eventlite_s', '')") || !strings.HasPrefix(q, `BEGIN ISOLATION LEVEL READ COMMITTED; SET LOCAL search_path TO "s"; WITH h AS`) {
		t.Errorf("BeginSQL = %s", q)
	}
}
