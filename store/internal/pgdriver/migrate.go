package pgdriver

import (
	"context"
	"embed"
	"fmt"
	"hash/fnv"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

type migration struct {
	version int
	name    string
	sql     string
}

// migrations reads the embedded NNNN_name.sql files in order and checks
// that they are numbered 1, 2, ... without a gap.
func migrations() ([]migration, error) {
	names, err := fs.Glob(migrationFiles, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	slices.Sort(names)
	var ms []migration
	for i, n := range names {
		base := path.Base(n)
		num, _, ok := strings.Cut(base, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v != i+1 {
			return nil, fmt.Errorf("migration %s: want number %04d", base, i+1)
		}
		b, err := migrationFiles.ReadFile(n)
		if err != nil {
			return nil, err
		}
		ms = append(ms, migration{version: v, name: base, sql: string(b)})
	}
	return ms, nil
}

// SchemaVersion is the schema version this binary knows: the number of its
// migrations.
func SchemaVersion() int {
	ms, err := migrations()
	if err != nil {
		panic(err)
	}
	return len(ms)
}

// migrateLockKey is the advisory lock key of schema's migrations: two
// processes migrating one schema wait for each other, different schemas
// do not.
func migrateLockKey(schema string) int64 {
	h := fnv.New64a()
	h.Write([]byte("eventlite.migrate:" + schema))
	return int64(h.Sum64())
}

// Migrate creates the schema if needed and applies every pending migration
// in one transaction, under pg_advisory_xact_lock (a transaction lock:
// session locks are lost or leaked behind a pooler in transaction mode),
// recording each version in schema_migrations. Several processes may call
// it at once: one applies, the others then find nothing to do. A schema
// migrated by a newer binary is refused with *SchemaTooNewError and left
// unchanged.
func (db *DB) Migrate(ctx context.Context) error {
	ms, err := migrations()
	if err != nil {
		return err
	}
	c, err := db.acquire(ctx, "migrate")
	if err != nil {
		return err
	}
	defer c.Release()
	err = pgx.BeginTxFunc(ctx, c, pgx.TxOptions{IsoLevel: pgx.ReadCommitted}, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", migrateLockKey(db.schema)); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+db.quoted); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, "SET LOCAL search_path TO "+db.quoted); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
    version    INTEGER PRIMARY KEY,
    name       TEXT    NOT NULL,
    applied_at BIGINT  NOT NULL -- unix nanoseconds
)`); err != nil {
			return err
		}
		var have int
		if err := tx.QueryRow(ctx, "SELECT COALESCE(max(version), 0) FROM schema_migrations").Scan(&have); err != nil {
			return err
		}
		if have > len(ms) {
			return &SchemaTooNewError{Schema: db.schema, Version: have, Known: len(ms)}
		}
		for _, m := range ms[have:] {
			if _, err := tx.Exec(ctx, m.sql); err != nil {
				return fmt.Errorf("migration %s: %w", m.name, err)
			}
			if _, err := tx.Exec(ctx, "INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)",
				m.version, m.name, time.Now().UnixNano()); err != nil {
				return err
			}
		}
		return nil
	})
	if _, ok := err.(*SchemaTooNewError); ok {
		return err
	}
	return classify("migrate schema "+db.schema, err)
}
