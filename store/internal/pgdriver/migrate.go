package pgdriver

import (
	"context"
	"embed"
	"hash/fnv"
	"time"

	"github.com/eventlite/eventlite/store/internal/driver"
	"github.com/eventlite/eventlite/store/internal/driver/sqlshared"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// Migrations returns the embedded migrations in order, numbered 1, 2, ...
// without a gap. PostgreSQL's schema starts at the SQLite store's last
// schema: its numbers are its own.
func Migrations() ([]driver.Migration, error) { return sqlshared.ReadMigrations(migrationFS) }

// Migrations returns the embedded migrations.
func (Driver) Migrations() ([]driver.Migration, error) { return Migrations() }

// versionSQL reads the schema version in one statement, whether or not
// schema_migrations exists: 0 when it does not. (A query naming a missing
// table fails when it is planned; query_to_xml plans its query only when
// the CASE reaches it.)
const versionSQL = `SELECT CASE WHEN to_regclass('schema_migrations') IS NULL THEN 0
	ELSE ((xpath('/row/v/text()', query_to_xml('SELECT COALESCE(max(version), 0) AS v FROM schema_migrations', false, true, '')))[1])::text::int END`

// SchemaVersion reads the highest version in schema_migrations: 0 for a
// schema (or a database) no migration has touched.
func (Driver) SchemaVersion(ctx context.Context, q driver.ReadQuerier) (int, error) {
	var v int
	err := q.QueryRowContext(ctx, versionSQL).Scan(&v)
	return v, err
}

// migrateLockKey is the advisory lock key of a schema's migrations: two
// processes migrating one schema wait for each other, different schemas
// do not.
func migrateLockKey(schema string) int64 {
	h := fnv.New64a()
	h.Write([]byte("eventlite.migrate:" + schema))
	return int64(h.Sum64())
}

// ApplyMigration runs m in a transaction that first takes the schema's
// pg_advisory_xact_lock (a transaction lock: a session lock is lost or
// leaked behind a pooler in transaction mode), creates the schema and
// schema_migrations if they do not exist, reads the version again, and
// records m's version with m. The rollback runs under
// context.Background, so that an interrupted migration still leaves the
// connection usable.
func (Driver) ApplyMigration(ctx context.Context, c driver.Querier, m driver.Migration, _ func(events int64)) (applied bool, err error) {
	var schema string
	if err := c.QueryRowContext(ctx, `SHOW search_path`).Scan(&schema); err != nil {
		return false, err
	}
	if _, err := c.ExecContext(ctx, "BEGIN ISOLATION LEVEL READ COMMITTED"); err != nil {
		return false, err
	}
	defer func() {
		if err != nil {
			_, _ = c.ExecContext(context.Background(), "ROLLBACK")
		}
	}()
	if _, err := c.ExecContext(ctx, `SELECT pg_advisory_xact_lock($1)`, migrateLockKey(schema)); err != nil {
		return false, err
	}
	if _, err := c.ExecContext(ctx, `CREATE SCHEMA IF NOT EXISTS `+schema); err != nil {
		return false, err
	}
	if _, err := c.ExecContext(ctx, `SET LOCAL search_path TO `+schema); err != nil {
		return false, err
	}
	if _, err := c.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
    version    INTEGER PRIMARY KEY,
    name       TEXT    NOT NULL,
    applied_at BIGINT  NOT NULL -- unix nanoseconds
)`); err != nil {
		return false, err
	}
	var current int
	if err := c.QueryRowContext(ctx, `SELECT COALESCE(max(version), 0) FROM schema_migrations`).Scan(&current); err != nil {
		return false, err
	}
	if current >= m.Version {
		_, err := c.ExecContext(ctx, "COMMIT")
		return false, err
	}
	fail := func(err error) (bool, error) { return false, &driver.MigrationError{Name: m.Name, Err: err} }
	if _, err := c.ExecContext(ctx, m.SQL); err != nil {
		return fail(err)
	}
	if _, err := c.ExecContext(ctx, `INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)`,
		m.Version, m.Name, time.Now().UnixNano()); err != nil {
		return fail(err)
	}
	if _, err := c.ExecContext(ctx, "COMMIT"); err != nil {
		return fail(err)
	}
	return true, nil
}
