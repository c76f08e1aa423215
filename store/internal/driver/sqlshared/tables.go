package sqlshared

import (
	"context"
	"database/sql"
	"strings"

	"github.com/eventlite/eventlite/store/internal/driver"
)

// DropTable runs DROP TABLE IF EXISTS, which drops the table's indexes.
func (x Exec[D]) DropTable(ctx context.Context, q driver.Querier, name string) error {
	_, err := q.ExecContext(ctx, `DROP TABLE IF EXISTS `+x.dialect().QuoteIdent(name))
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
func (x Exec[D]) CountRows(ctx context.Context, q driver.ReadQuerier, table string) (int64, error) {
	return countRows(ctx, q, `SELECT count(*) FROM `+x.dialect().QuoteIdent(table))
}

// match builds "a.c1 <NotDistinct> b.c1 AND ..." over cols: NULL matches
// NULL.
func (x Exec[D]) match(a, b string, cols []string) string {
	d := x.dialect()
	parts := make([]string, len(cols))
	for i, c := range cols {
		q := d.QuoteIdent(c)
		parts[i] = a + "." + q + " " + d.NotDistinct() + " " + b + "." + q
	}
	return strings.Join(parts, " AND ")
}

// CountUnmatched runs NOT EXISTS on the key.
func (x Exec[D]) CountUnmatched(ctx context.Context, q driver.ReadQuerier, a, b string, key []string) (int64, error) {
	d := x.dialect()
	return countRows(ctx, q, `SELECT count(*) FROM `+d.QuoteIdent(a)+` a WHERE NOT EXISTS (SELECT 1 FROM `+d.QuoteIdent(b)+` b WHERE `+x.match("a", "b", key)+`)`)
}

// CountChanged joins on the key.
func (x Exec[D]) CountChanged(ctx context.Context, q driver.ReadQuerier, a, b string, key, rest []string) (int64, error) {
	d := x.dialect()
	return countRows(ctx, q, `SELECT count(*) FROM `+d.QuoteIdent(a)+` a JOIN `+d.QuoteIdent(b)+` b ON `+x.match("a", "b", key)+` WHERE NOT (`+x.match("a", "b", rest)+`)`)
}

// CountSurplus counts the copies of each row on both sides: how many
// copies of each row a has beyond b.
func (x Exec[D]) CountSurplus(ctx context.Context, q driver.ReadQuerier, a, b string, cols []string) (int64, error) {
	d := x.dialect()
	quoted := make([]string, len(cols))
	for i, c := range cols {
		quoted[i] = d.QuoteIdent(c)
	}
	list := strings.Join(quoted, ", ")
	return countRows(ctx, q, `WITH x AS (SELECT `+list+`, count(*) AS n__ FROM `+d.QuoteIdent(a)+` GROUP BY `+list+`),
				y AS (SELECT `+list+`, count(*) AS n__ FROM `+d.QuoteIdent(b)+` GROUP BY `+list+`)
				SELECT `+d.Int64(`SUM(`+d.Greatest()+`(x.n__ - COALESCE(y.n__, 0), 0))`)+` FROM x LEFT JOIN y ON `+x.match("x", "y", cols))
}
