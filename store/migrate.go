package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/eventlite/eventlite/store/internal/driver"
)

// migrations returns the driver's migrations in order: the schema this
// binary writes, and the names it reserves (reservedTable).
func migrations() ([]driver.Migration, error) { return defaultDriver.Migrations() }

// SchemaVersion is the schema version this binary writes to a SQLite
// file. A PostgreSQL schema has its own numbers.
func SchemaVersion() int {
	ms, _ := migrations()
	return len(ms)
}

// schemaKnown is the schema version this binary writes with the store's
// driver.
func (s *Store) schemaKnown() int {
	ms, _ := s.drv.Migrations()
	return len(ms)
}

// migrate applies the pending migrations, each in its own write
// transaction that reads the schema version again under the write lock
// (driver.Migrator), so processes opening one file at once apply each
// migration exactly once.
func (s *Store) migrate(ctx context.Context) error {
	ms, err := s.drv.Migrations()
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	current, err := s.schemaVersion(ctx, len(ms))
	if err != nil {
		return err
	}
	for _, m := range ms {
		if m.Version <= current {
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
	current, err := s.drv.SchemaVersion(ctx, s.wconn)
	if err != nil {
		return 0, fmt.Errorf("store: read schema version of %s: %w", s.path, mapErr(err))
	}
	if current > known {
		return 0, fmt.Errorf("%w: %s has schema %d, this eventlite knows up to %d: upgrade eventlite", ErrSchemaTooNew, s.path, current, known)
	}
	return current, nil
}

func (s *Store) applyMigration(ctx context.Context, m driver.Migration) error {
	applied, err := s.drv.ApplyMigration(ctx, s.wconn, m, func(events int64) { s.warnRebuild(m, events) })
	var me *driver.MigrationError
	switch {
	case errors.As(err, &me):
		return fmt.Errorf("store: migration %s: %w", me.Name, mapErr(me.Err))
	case err != nil:
		return fmt.Errorf("store: migrate %s: %w", s.path, mapErr(err))
	}
	if applied {
		s.log.Info("applied migration", "name", m.Name, "path", s.path)
	}
	return nil
}

// warnRebuild says, before a migration that rebuilds a table (the
// events table, for 0014) runs on a large file, that it takes a while:
// every event is copied, inside one transaction that holds the write
// lock, and the file grows by about the log's size (later appends reuse
// the freed pages; 'eventlite scavenge --vacuum' gives them back). It is
// a warning so that the CLI, quiet by default, shows it. Measured: about
// 20 s for 1,000,000 events on a 2-core machine.
func (s *Store) warnRebuild(m driver.Migration, events int64) {
	if events < rebuildWarnEvents {
		return
	}
	s.log.Warn("migration rewrites the events table; this takes a while (about 20-30 s per 1,000,000 events) and the file grows by about the log's size until appends reuse the space; interrupting it changes nothing",
		"name", m.Name, "events", events, "path", s.path)
}

// rebuildWarnEvents is the size from which warnRebuild speaks.
var rebuildWarnEvents int64 = 100_000
