package sqlitedriver

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"strings"

	"github.com/eventlite/eventlite/store/internal/driver"
)

// TableExists asks sqlite_master.
func (Exec) TableExists(ctx context.Context, q driver.ReadQuerier, name string) (bool, error) {
	var n int
	err := q.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?`, name).Scan(&n)
	return n > 0, err
}

// SchemaObjects counts sqlite_master's objects and reads user_version in
// one statement.
func (Exec) SchemaObjects(ctx context.Context, q driver.ReadQuerier, tables []string) (objects, named, version int, err error) {
	args := make([]any, len(tables))
	in := ""
	for i, t := range tables {
		args[i] = t
		if i > 0 {
			in += ", "
		}
		in += "?"
	}
	err = q.QueryRowContext(ctx, `SELECT count(*), count(CASE WHEN type = 'table' AND name IN (`+in+`) THEN 1 END),
		(SELECT user_version FROM pragma_user_version) FROM sqlite_master`, args...).Scan(&objects, &named, &version)
	return objects, named, version, err
}

// TableColumns reads pragma_table_info.
func (Exec) TableColumns(ctx context.Context, q driver.ReadQuerier, name string) (driver.TableShape, error) {
	rows, err := q.QueryContext(ctx, `SELECT name, pk FROM pragma_table_info(?) ORDER BY cid`, name)
	if err != nil {
		return driver.TableShape{}, err
	}
	defer rows.Close()
	var sh driver.TableShape
	type pkCol struct {
		name string
		pos  int
	}
	var pks []pkCol
	for rows.Next() {
		var col string
		var pk int
		if err := rows.Scan(&col, &pk); err != nil {
			return driver.TableShape{}, err
		}
		sh.Exists = true
		sh.Cols = append(sh.Cols, col)
		if pk > 0 {
			pks = append(pks, pkCol{col, pk})
		}
	}
	if err := rows.Err(); err != nil {
		return driver.TableShape{}, err
	}
	slices.SortFunc(pks, func(a, b pkCol) int { return a.pos - b.pos })
	for _, p := range pks {
		sh.PK = append(sh.PK, p.name)
	}
	return sh, nil
}

// QuoteIdent quotes an identifier for SQLite (and standard SQL).
func QuoteIdent(name string) string {
	return `"` + strings.ReplaceAll(name, `"`, `""`) + `"`
}

// StartSnapshot reads once: SQLite's deferred transaction takes its
// snapshot at its first read.
func (Exec) StartSnapshot(ctx context.Context, tx *sql.Tx) error {
	var one int
	err := tx.QueryRowContext(ctx, `SELECT 1 FROM sqlite_master LIMIT 1`).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	return err
}
