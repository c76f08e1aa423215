package sqlitedriver

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/eventlite/eventlite/store/internal/driver"
)

// Driver is the SQLite lifecycle: one file, one writer connection, a read
// pool, WAL. It holds nothing.
type Driver struct{}

var _ driver.Driver = Driver{}

// Dialect reports SQLite.
func (Driver) Dialect() driver.Dialect { return driver.SQLite }

// Executor returns Exec.
func (Driver) Executor() driver.Executor { return Exec{} }

// OpenWriter opens the writer's pool of one connection, which never
// expires (its prepared statements live as long as the store).
func (Driver) OpenWriter(cfg driver.OpenConfig) (*sql.DB, error) {
	db, err := sql.Open("sqlite", DSN(cfg, true))
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	db.SetConnMaxLifetime(0)
	db.SetConnMaxIdleTime(0)
	return db, nil
}

// OpenReader opens the read pool, all of whose connections stay idle
// rather than closing, so that their page caches survive.
func (Driver) OpenReader(cfg driver.OpenConfig, conns int) (*sql.DB, error) {
	db, err := sql.Open("sqlite", DSN(cfg, false))
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(conns)
	db.SetMaxIdleConns(conns)
	return db, nil
}

// DSN builds the connection string. Pragmas go in the DSN so every pooled
// connection gets them (an Exec would set them on one connection only).
func DSN(cfg driver.OpenConfig, write bool) string {
	// SQLite decodes the file: URI, so escape what URIs treat specially.
	p := strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(filepath.ToSlash(cfg.Path))
	var q []string
	switch {
	case cfg.Attach:
		// Another user's file that a process has open: SQLite reads it
		// through the existing -wal and -shm and writes nothing.
		q = append(q, "mode=ro")
	case cfg.ReadOnly:
		// Read-write at the OS level, so that when its last connection
		// closes the store checkpoints and removes the -wal and -shm files
		// it may have created; query_only refuses every write.
		q = append(q, "mode=rw", "_pragma=query_only(1)")
	}
	q = append(q,
		fmt.Sprintf("_pragma=busy_timeout(%d)", cfg.BusyTimeout.Milliseconds()),
		"_pragma=synchronous("+cfg.Synchronous+")",
		"_pragma=foreign_keys(1)",
		fmt.Sprintf("_pragma=journal_size_limit(%d)", cfg.JournalSizeLimit),
		"_pragma=mmap_size(0)",
	)
	if write && !cfg.ReadOnly && !cfg.Attach {
		// Every write transaction takes the write lock up front: a deferred
		// transaction that reads and then writes fails with SQLITE_BUSY
		// under contention, and busy_timeout cannot help it.
		q = append(q, "_txlock=immediate")
		// Overwrite deleted content where that costs no extra I/O, so
		// that a scavenge (which sets ON) leaves no removed bytes behind
		// in pages that earlier writes rearranged.
		q = append(q, "_pragma=secure_delete(FAST)")
	}
	return "file:" + p + "?" + strings.Join(q, "&")
}

// InitNew lets a scavenge give freed pages back to the file system
// (incremental_vacuum). SQLite takes auto_vacuum only before the first
// table is created; on a file with tables it does nothing (a full VACUUM
// converts one).
func (Driver) InitNew(ctx context.Context, q driver.Querier) error {
	_, err := q.ExecContext(ctx, "PRAGMA auto_vacuum = INCREMENTAL")
	return err
}

// EnableWAL switches the file to WAL. Several processes opening a new
// file at once may get "database is locked" here even with a busy
// timeout: SQLite does not run the busy handler for this.
func (Driver) EnableWAL(ctx context.Context, q driver.Querier) error {
	var mode string
	if err := q.QueryRowContext(ctx, "PRAGMA journal_mode=WAL").Scan(&mode); err != nil {
		return err
	}
	if !strings.EqualFold(mode, "wal") {
		return fmt.Errorf("journal mode is %q", mode)
	}
	return nil
}

// CommitCounter reads PRAGMA data_version, which changes on a connection
// when any other connection commits.
func (Driver) CommitCounter(ctx context.Context, q driver.ReadQuerier) (int64, error) {
	var v int64
	err := q.QueryRowContext(ctx, "PRAGMA data_version").Scan(&v)
	return v, err
}

// settingNames are the pragmas Setting reads.
var settingNames = []string{"journal_mode", "synchronous", "foreign_keys", "busy_timeout", "mmap_size", "journal_size_limit"}

// SettingNames: the pragmas every connection sets in its DSN, and the
// journal mode.
func (Driver) SettingNames() []string { return append([]string(nil), settingNames...) }

// Setting reads a pragma; SQLite prints synchronous FULL as "2", NORMAL
// as "1".
func (Driver) Setting(ctx context.Context, q driver.ReadQuerier, name string) (string, error) {
	if !slices.Contains(settingNames, name) {
		return "", fmt.Errorf("sqlitedriver: no setting %q", name)
	}
	var v string
	err := q.QueryRowContext(ctx, "PRAGMA "+name).Scan(&v)
	return v, err
}
