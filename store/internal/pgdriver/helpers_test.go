package pgdriver

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/eventlite/eventlite/store/internal/pgaddr"
)

// testURLEnv names the variable that holds the test server's address.
const testURLEnv = "EVENTLITE_TEST_POSTGRES"

// testURL returns the test server's address or skips the test.
func testURL(tb testing.TB) string {
	tb.Helper()
	u := os.Getenv(testURLEnv)
	if u == "" {
		tb.Skip("PostgreSQL tests skipped: set " + testURLEnv + " to a server's URL (e.g. postgres://postgres@127.0.0.1:5432/test?sslmode=disable)")
	}
	return u
}

// freshSchema returns a schema name no other test uses and drops that
// schema when the test ends.
func freshSchema(tb testing.TB) string {
	tb.Helper()
	base := testURL(tb)
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		tb.Fatal(err)
	}
	schema := "t_" + hex.EncodeToString(b[:])
	tb.Cleanup(func() {
		ctx := context.Background()
		a, err := pgaddr.ParseAddress(base)
		if err != nil {
			tb.Error(err)
			return
		}
		c, err := pgx.Connect(ctx, a.ConnString)
		if err != nil {
			tb.Errorf("drop schema %s: %v", schema, err)
			return
		}
		defer c.Close(ctx)
		if _, err := c.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE"); err != nil {
			tb.Errorf("drop schema %s: %v", schema, err)
		}
	})
	return schema
}

// withSchema returns the test server's address with eventlite_schema set.
func withSchema(tb testing.TB, schema string) string {
	tb.Helper()
	u, err := url.Parse(testURL(tb))
	if err != nil {
		tb.Fatal(err)
	}
	q := u.Query()
	q.Set(pgaddr.SchemaParam, schema)
	u.RawQuery = q.Encode()
	return u.String()
}
