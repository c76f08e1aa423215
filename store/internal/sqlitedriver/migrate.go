package sqlitedriver

import (
	"context"
	"embed"
	"fmt"
	"strings"

	"github.com/eventlite/eventlite/store/internal/driver"
	"github.com/eventlite/eventlite/store/internal/driver/sqlshared"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// Migrations returns the embedded migrations in order. Their file names
// start with the version number: 0001_event_log.sql.
// A migration that begins with fkOffMarker rebuilds tables.
func Migrations() ([]driver.Migration, error) {
	ms, err := sqlshared.ReadMigrations(migrationFS)
	for i := range ms {
		ms[i].Rebuilds = strings.HasPrefix(ms[i].SQL, fkOffMarker)
	}
	return ms, err
}

// Migrations returns the embedded migrations.
func (Driver) Migrations() ([]driver.Migration, error) { return Migrations() }

// SchemaVersion reads PRAGMA user_version.
func (Driver) SchemaVersion(ctx context.Context, q driver.ReadQuerier) (int, error) {
	var v int
	err := q.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v)
	return v, err
}

// fkOffMarker, as a migration's first line, runs it with foreign keys off
// (they cannot be switched inside a transaction): a migration that
// rebuilds a table other tables reference drops the old one, which with
// foreign keys on would delete the referencing rows' parents. The
// migration checks every foreign key before it commits.
const fkOffMarker = "-- eventlite: foreign_keys off\n"

// ApplyMigration runs m in a BEGIN IMMEDIATE transaction that re-reads
// user_version under the write lock and sets it with m. The rollback and
// the switch back to foreign keys on run under context.Background, so
// that an interrupted migration still leaves the connection as it was.
func (Driver) ApplyMigration(ctx context.Context, c driver.Querier, m driver.Migration, rebuilding func(events int64)) (applied bool, err error) {
	fkOff := strings.HasPrefix(m.SQL, fkOffMarker)
	if fkOff {
		if _, err := c.ExecContext(ctx, "PRAGMA foreign_keys = OFF"); err != nil {
			return false, err
		}
		defer func() {
			if _, ferr := c.ExecContext(context.Background(), "PRAGMA foreign_keys = ON"); ferr != nil && err == nil {
				err = ferr
			}
		}()
	}
	if _, err := c.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		return false, err
	}
	defer func() {
		if err != nil {
			_, _ = c.ExecContext(context.Background(), "ROLLBACK")
		}
	}()
	var current int
	if err := c.QueryRowContext(ctx, "PRAGMA user_version").Scan(&current); err != nil {
		return false, err
	}
	if current >= m.Version {
		_, err := c.ExecContext(ctx, "COMMIT")
		return false, err
	}
	if fkOff && rebuilding != nil {
		var events int64
		if err := c.QueryRowContext(ctx, "SELECT count(*) FROM events").Scan(&events); err == nil {
			rebuilding(events)
		}
	}
	fail := func(err error) (bool, error) { return false, &driver.MigrationError{Name: m.Name, Err: err} }
	if _, err := c.ExecContext(ctx, m.SQL); err != nil {
		return fail(err)
	}
	if fkOff {
		if err := foreignKeyCheck(ctx, c); err != nil {
			return fail(err)
		}
	}
	if _, err := c.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", m.Version)); err != nil {
		return fail(err)
	}
	if _, err := c.ExecContext(ctx, "COMMIT"); err != nil {
		return fail(err)
	}
	return true, nil
}

// foreignKeyCheck returns an error naming the first row whose foreign key
// has no parent.
func foreignKeyCheck(ctx context.Context, c driver.ReadQuerier) error {
	rows, err := c.QueryContext(ctx, "PRAGMA foreign_key_check")
	if err != nil {
		return err
	}
	defer rows.Close()
	if rows.Next() {
		var table, parent string
		var rowid, fk any
		if err := rows.Scan(&table, &rowid, &parent, &fk); err != nil {
			return err
		}
		return fmt.Errorf("foreign key check: a row of %s (rowid %v) references a missing row of %s", table, rowid, parent)
	}
	return rows.Err()
}
