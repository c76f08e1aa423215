package sqlitedriver

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"strconv"
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

// RenameTable runs ALTER TABLE ... RENAME TO.
func (Exec) RenameTable(ctx context.Context, q driver.Querier, from, to string) error {
	_, err := q.ExecContext(ctx, `ALTER TABLE `+QuoteIdent(from)+` RENAME TO `+QuoteIdent(to))
	return err
}

// QuoteIdent quotes an identifier for SQLite (and standard SQL).
func QuoteIdent(name string) string {
	return `"` + strings.ReplaceAll(name, `"`, `""`) + `"`
}

// scopes holds the statements of the usual depths, built once.
var scopes = func() (s [8]driver.ScopeSQL) {
	for i := range s {
		s[i] = newScope(i + 1)
	}
	return s
}()

func newScope(depth int) driver.ScopeSQL {
	name := "eventlite_nested_" + strconv.Itoa(depth)
	return driver.ScopeSQL{Open: `SAVEPOINT ` + name, Rollback: `ROLLBACK TO ` + name, Release: `RELEASE ` + name}
}

// Scope returns savepoint statements named eventlite_nested_<depth>.
func (Exec) Scope(depth int) driver.ScopeSQL {
	if depth <= len(scopes) {
		return scopes[depth-1]
	}
	return newScope(depth)
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
