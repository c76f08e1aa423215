package store

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"strconv"
)

// What the store asks SQLite on behalf of projection and replay, and of
// its own file checks: which tables exist, their columns, what a file
// holds, table renames, savepoints, the start of a read snapshot. Every
// query of sqlite_master and every RENAME TO of the store is here (a test
// checks it), so that a second driver replaces this one file; the store's
// other statements (appends, the outbox, ledgers, migrations, pragmas)
// are not behind the seam yet.

// driverDialect is the engine this file speaks.
const driverDialect = DialectSQLite

// tableExists reports whether a table of that exact name exists.
func tableExists(ctx context.Context, q rowQuerier, name string) (bool, error) {
	var n int
	err := q.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?`, name).Scan(&n)
	return n > 0, err
}

// schemaObjects reads, in one statement (so one snapshot: another process
// may be applying a migration, whose tables and version commit together),
// how many schema objects the file holds, how many of them are tables
// named in tables, and the file's schema version (user_version).
func schemaObjects(ctx context.Context, q rowQuerier, tables []string) (objects, named, version int, err error) {
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

// tableColumns reads a table's columns in declaration order and its
// primary key in key order; exists is false for no such table.
func tableColumns(ctx context.Context, q queryer, name string) (tableShape, error) {
	rows, err := q.QueryContext(ctx, `SELECT name, pk FROM pragma_table_info(?) ORDER BY cid`, name)
	if err != nil {
		return tableShape{}, err
	}
	defer rows.Close()
	var sh tableShape
	type pkCol struct {
		name string
		pos  int
	}
	var pks []pkCol
	for rows.Next() {
		var col string
		var pk int
		if err := rows.Scan(&col, &pk); err != nil {
			return tableShape{}, err
		}
		sh.exists = true
		sh.cols = append(sh.cols, col)
		if pk > 0 {
			pks = append(pks, pkCol{col, pk})
		}
	}
	if err := rows.Err(); err != nil {
		return tableShape{}, err
	}
	slices.SortFunc(pks, func(a, b pkCol) int { return a.pos - b.pos })
	for _, p := range pks {
		sh.pk = append(sh.pk, p.name)
	}
	return sh, nil
}

// renameTableSQL renames a table; its indexes keep their names.
func renameTableSQL(from, to string) string {
	return `ALTER TABLE ` + quoteIdent(from) + ` RENAME TO ` + quoteIdent(to)
}

// scopeSQL are the statements of a Tx.Nested scope: a savepoint named by
// the store (eventlite_nested_<depth>), never by a caller.
type scopeSQL struct{ open, rollback, release string }

// scopes holds the statements of the usual depths, built once.
var scopes = func() (s [8]scopeSQL) {
	for i := range s {
		s[i] = newScopeSQL(i + 1)
	}
	return s
}()

func newScopeSQL(depth int) scopeSQL {
	name := nestedName(depth)
	return scopeSQL{open: `SAVEPOINT ` + name, rollback: `ROLLBACK TO ` + name, release: `RELEASE ` + name}
}

// nestedSQL returns the statements of a scope at depth (1 for the
// outermost).
func nestedSQL(depth int) scopeSQL {
	if depth <= len(scopes) {
		return scopes[depth-1]
	}
	return newScopeSQL(depth)
}

func nestedName(depth int) string { return "eventlite_nested_" + strconv.Itoa(depth) }

// startSnapshot makes a read transaction take its snapshot now: SQLite's
// deferred transaction takes it at its first read.
func startSnapshot(ctx context.Context, tx *sql.Tx) error {
	var one int
	err := tx.QueryRowContext(ctx, `SELECT 1 FROM sqlite_master LIMIT 1`).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	return err
}
