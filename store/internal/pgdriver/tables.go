package pgdriver

import (
	"context"
	"database/sql"
	"strings"

	"github.com/eventlite/eventlite/store/internal/driver"
)

// DropTable runs DROP TABLE IF EXISTS, which drops the table's indexes.
func (Exec) DropTable(ctx context.Context, q driver.Querier, name string) error {
	_, err := q.ExecContext(ctx, `DROP TABLE IF EXISTS `+QuoteIdent(name))
	return err
}

// countRows runs a query of one count; NULL (SUM over no rows) is 0.
func countRows(ctx context.Context, q driver.ReadQuerier, query string) (int64, error) {
	var n sql.NullInt64
	if err := q.QueryRowContext(ctx, query).Scan(&n); err != nil {
		return 0, err
	}
	return n.Int64, nil
}

// CountRows runs count(*).
func (Exec) CountRows(ctx context.Context, q driver.ReadQuerier, table string) (int64, error) {
	return countRows(ctx, q, `SELECT count(*) FROM `+QuoteIdent(table))
}

// match builds "a.c1 IS NOT DISTINCT FROM b.c1 AND ..." over cols: NULL
// matches NULL.
func match(a, b string, cols []string) string {
	parts := make([]string, len(cols))
	for i, c := range cols {
		q := QuoteIdent(c)
		parts[i] = a + "." + q + " IS NOT DISTINCT FROM " + b + "." + q
	}
	return strings.Join(parts, " AND ")
}

// CountUnmatched runs NOT EXISTS on the key.
func (Exec) CountUnmatched(ctx context.Context, q driver.ReadQuerier, a, b string, key []string) (int64, error) {
	return countRows(ctx, q, `SELECT count(*) FROM `+QuoteIdent(a)+` a WHERE NOT EXISTS (SELECT 1 FROM `+QuoteIdent(b)+` b WHERE `+match("a", "b", key)+`)`)
}

// CountChanged joins on the key.
func (Exec) CountChanged(ctx context.Context, q driver.ReadQuerier, a, b string, key, rest []string) (int64, error) {
	return countRows(ctx, q, `SELECT count(*) FROM `+QuoteIdent(a)+` a JOIN `+QuoteIdent(b)+` b ON `+match("a", "b", key)+` WHERE NOT (`+match("a", "b", rest)+`)`)
}

// CountSurplus counts the copies of each row on both sides: how many
// copies of each row a has beyond b. SUM of bigint is numeric: cast back.
func (Exec) CountSurplus(ctx context.Context, q driver.ReadQuerier, a, b string, cols []string) (int64, error) {
	quoted := make([]string, len(cols))
	for i, c := range cols {
		quoted[i] = QuoteIdent(c)
	}
	list := strings.Join(quoted, ", ")
	return countRows(ctx, q, `WITH x AS (SELECT `+list+`, count(*) AS n__ FROM `+QuoteIdent(a)+` GROUP BY `+list+`),
				y AS (SELECT `+list+`, count(*) AS n__ FROM `+QuoteIdent(b)+` GROUP BY `+list+`)
				SELECT SUM(GREATEST(x.n__ - COALESCE(y.n__, 0), 0))::bigint FROM x LEFT JOIN y ON `+match("x", "y", cols))
}

// QueryOnly makes the session's transactions read-only
// (default_transaction_read_only), or resets the setting to what the
// session started with: a store opened read-only stays read-only.
func (Exec) QueryOnly(ctx context.Context, q driver.Querier, on bool) error {
	query := `RESET default_transaction_read_only`
	if on {
		query = `SET default_transaction_read_only = on`
	}
	_, err := q.ExecContext(ctx, query)
	return err
}
