package pgdriver

import (
	"context"
	"database/sql"

	"github.com/jackc/pgx/v5"

	"github.com/eventlite/eventlite/store/internal/driver"
	"github.com/eventlite/eventlite/store/internal/driver/sqlshared"
)

// Exec is the PostgreSQL Executor. Its statements name tables without a
// schema: every connection's search path is the store's schema
// (connector), and every write transaction sets it again with SET LOCAL
// (Writer.Begin), which holds behind a pooler in transaction mode too.
type Exec struct{ sqlshared.Exec[dialect] }

var _ driver.Executor = Exec{}

// Dialect is driver.Postgres.
func (Exec) Dialect() driver.Dialect { return driver.Postgres }

// TableExists asks pg_catalog for a table of the schema.
func (Exec) TableExists(ctx context.Context, q driver.ReadQuerier, name string) (bool, error) {
	var n int
	err := q.QueryRowContext(ctx, `SELECT count(*) FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = current_schema() AND c.relname = $1 AND c.relkind IN ('r', 'p')`, name).Scan(&n)
	return n > 0, err
}

// SchemaObjects counts the schema's tables, views, sequences and
// functions, and reads the schema version, in one statement.
// schema_migrations is the version's own table: it is not counted.
func (Exec) SchemaObjects(ctx context.Context, q driver.ReadQuerier, tables []string) (objects, named, version int, err error) {
	err = q.QueryRowContext(ctx, `SELECT
	(SELECT count(*) FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p', 'v', 'm', 'f', 'S') AND c.relname <> 'schema_migrations')
	+ (SELECT count(*) FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = current_schema()),
	(SELECT count(*) FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p') AND c.relname = ANY($1)),
	(`+versionSQL+`)`, tables).Scan(&objects, &named, &version)
	return objects, named, version, err
}

// TableColumns reads pg_attribute and the primary key's pg_index. Its
// indkey is an int2vector, whose subscripts start at 0: a column's place
// in the key counts from the array's lower bound.
func (Exec) TableColumns(ctx context.Context, q driver.ReadQuerier, name string) (driver.TableShape, error) {
	rows, err := q.QueryContext(ctx, `SELECT a.attname,
			COALESCE(array_position(i.indkey::int2[], a.attnum) - array_lower(i.indkey::int2[], 1) + 1, 0)
		FROM pg_catalog.pg_class c
		JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
		JOIN pg_catalog.pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
		LEFT JOIN pg_catalog.pg_index i ON i.indrelid = c.oid AND i.indisprimary
		WHERE n.nspname = current_schema() AND c.relname = $1 AND c.relkind IN ('r', 'p')
		ORDER BY a.attnum`, name)
	if err != nil {
		return driver.TableShape{}, err
	}
	defer rows.Close()
	var sh driver.TableShape
	pk := map[int]string{}
	for rows.Next() {
		var col string
		var pos int
		if err := rows.Scan(&col, &pos); err != nil {
			return driver.TableShape{}, err
		}
		sh.Exists = true
		sh.Cols = append(sh.Cols, col)
		if pos > 0 {
			pk[pos] = col
		}
	}
	if err := rows.Err(); err != nil {
		return driver.TableShape{}, err
	}
	for i := 1; i <= len(pk); i++ {
		sh.PK = append(sh.PK, pk[i])
	}
	return sh, nil
}

// QuoteIdent quotes an identifier for PostgreSQL.
func QuoteIdent(name string) string { return pgx.Identifier{name}.Sanitize() }

// StartSnapshot makes the read transaction REPEATABLE READ, which must be
// its first statement: every query of it then sees the snapshot its
// first query takes, which the search path setting does at once.
func (Exec) StartSnapshot(ctx context.Context, tx *sql.Tx) error {
	if _, err := tx.ExecContext(ctx, `SET TRANSACTION ISOLATION LEVEL REPEATABLE READ`); err != nil {
		return err
	}
	var one int
	return tx.QueryRowContext(ctx, `SELECT 1 FROM log_head`).Scan(&one)
}
