package store

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

type migration struct {
	version int
	name    string
	sql     string
}

// migrations returns the embedded migrations in order. Their file names
// start with the version number: 0001_event_log.sql.
func migrations() ([]migration, error) {
	entries, err := fs.ReadDir(migrationFS, "migrations")
	if err != nil {
		return nil, err
	}
	var ms []migration
	for _, e := range entries {
		num, _, ok := strings.Cut(e.Name(), "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil {
			return nil, fmt.Errorf("migration %s: name must start with a number and '_'", e.Name())
		}
		b, err := migrationFS.ReadFile(path.Join("migrations", e.Name()))
		if err != nil {
			return nil, err
		}
		ms = append(ms, migration{version: v, name: e.Name(), sql: string(b)})
	}
	slices.SortFunc(ms, func(a, b migration) int { return a.version - b.version })
	for i, m := range ms {
		if m.version != i+1 {
			return nil, fmt.Errorf("migration %s: expected version %d", m.name, i+1)
		}
	}
	return ms, nil
}

// SchemaVersion is the schema version this binary writes.
func SchemaVersion() int {
	ms, _ := migrations()
	return len(ms)
}

// migrate applies the pending migrations, each in its own immediate
// transaction that re-reads PRAGMA user_version under the write lock, so
// processes opening one file at once apply each migration exactly once.
func (s *Store) migrate(ctx context.Context) error {
	ms, err := migrations()
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	current, err := s.schemaVersion(ctx, len(ms))
	if err != nil {
		return err
	}
	for _, m := range ms {
		if m.version <= current {
			continue
		}
		if err := s.applyMigration(ctx, m); err != nil {
			return err
		}
	}
	return nil
}

// schemaVersion reads the file's schema version and refuses one above
// known (ErrSchemaTooNew). Open calls it before anything writes to the
// file, switching it to WAL included, so that a refused file is left as
// it was.
func (s *Store) schemaVersion(ctx context.Context, known int) (int, error) {
	var current int
	if err := s.wconn.QueryRowContext(ctx, "PRAGMA user_version").Scan(&current); err != nil {
		return 0, fmt.Errorf("store: read schema version of %s: %w", s.path, mapErr(err))
	}
	if current > known {
		return 0, fmt.Errorf("%w: %s has schema %d, this eventlite knows up to %d: upgrade eventlite", ErrSchemaTooNew, s.path, current, known)
	}
	return current, nil
}

// fkOffMarker, as a migration's first line, runs it with foreign keys off
// (they cannot be switched inside a transaction): a migration that
// rebuilds a table other tables reference drops the old one, which with
// foreign keys on would delete the referencing rows' parents. The
// migration checks every foreign key before it commits.
const fkOffMarker = "-- eventlite: foreign_keys off\n"

func (s *Store) applyMigration(ctx context.Context, m migration) (err error) {
	c := s.wconn
	if strings.HasPrefix(m.sql, fkOffMarker) {
		if _, err := c.ExecContext(ctx, "PRAGMA foreign_keys = OFF"); err != nil {
			return fmt.Errorf("store: migrate %s: %w", s.path, mapErr(err))
		}
		defer func() {
			if _, ferr := c.ExecContext(context.Background(), "PRAGMA foreign_keys = ON"); ferr != nil && err == nil {
				err = fmt.Errorf("store: migrate %s: %w", s.path, mapErr(ferr))
			}
		}()
	}
	if _, err := c.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		return fmt.Errorf("store: migrate %s: %w", s.path, mapErr(err))
	}
	defer func() {
		if err != nil {
			_, _ = c.ExecContext(context.Background(), "ROLLBACK")
		}
	}()
	var current int
	if err := c.QueryRowContext(ctx, "PRAGMA user_version").Scan(&current); err != nil {
		return fmt.Errorf("store: migrate %s: %w", s.path, err)
	}
	if current >= m.version {
		_, err := c.ExecContext(ctx, "COMMIT")
		return err
	}
	if strings.HasPrefix(m.sql, fkOffMarker) {
		s.warnRebuild(ctx, m)
	}
	if _, err := c.ExecContext(ctx, m.sql); err != nil {
		return fmt.Errorf("store: migration %s: %w", m.name, err)
	}
	if strings.HasPrefix(m.sql, fkOffMarker) {
		if err := foreignKeyCheck(ctx, c); err != nil {
			return fmt.Errorf("store: migration %s: %w", m.name, err)
		}
	}
	if _, err := c.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", m.version)); err != nil {
		return fmt.Errorf("store: migration %s: %w", m.name, err)
	}
	if _, err := c.ExecContext(ctx, "COMMIT"); err != nil {
		return fmt.Errorf("store: migration %s: %w", m.name, mapErr(err))
	}
	s.log.Info("applied migration", "name", m.name, "path", s.path)
	return nil
}

// warnRebuild says, before a migration that rebuilds a table (the
// events table, for 0014) runs on a large file, that it takes a while:
// every event is copied, inside one transaction that holds the write
// lock, and the file grows by about the log's size (later appends reuse
// the freed pages; 'eventlite scavenge --vacuum' gives them back). It is
// a warning so that the CLI, quiet by default, shows it. Measured: about
// 20 s for 1,000,000 events on a 2-core machine.
func (s *Store) warnRebuild(ctx context.Context, m migration) {
	var events int64
	if err := s.wconn.QueryRowContext(ctx, "SELECT count(*) FROM events").Scan(&events); err != nil || events < rebuildWarnEvents {
		return
	}
	s.log.Warn("migration rewrites the events table; this takes a while (about 20 s per 1,000,000 events) and the file grows by about the log's size until appends reuse the space; interrupting it changes nothing",
		"name", m.name, "events", events, "path", s.path)
}

// rebuildWarnEvents is the size from which warnRebuild speaks.
var rebuildWarnEvents int64 = 100_000

// foreignKeyCheck returns an error naming the first row whose foreign key
// has no parent.
func foreignKeyCheck(ctx context.Context, c queryer) error {
	rows, err := c.QueryContext(ctx, "PRAGMA foreign_key_check")
	if err != nil {
		return mapErr(err)
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
