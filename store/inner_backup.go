package store

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/eventlite/eventlite/store/internal/driver"
)

// What package store/backup (backup, restore, copy, inspect) needs of
// the store. The file operations run on the SQLite driver's Files, which
// backup calls directly; these methods give them the store's view of an
// engine's errors and of its schema, and give a copy the driver and the
// connections of a Store it opened. The methods without a Store
// (FileErr, FileClass, FileTables, FileProblems, CopyDriver) may be
// called on Inner(key, nil).

// FileErr maps an engine's error as the store's calls do: a lock held
// past the busy timeout or a lost session is ErrBusy.
func (inner) FileErr(err error) error { return mapErr(err) }

// FileClass tells an engine's error apart (corrupt, not a database,
// busy...), as the engine it came from classifies it.
func (inner) FileClass(err error) driver.Class { return classify(err) }

// FileTables are the tables the first migration creates: a file whose
// schema holds them all is an eventlite database.
func (inner) FileTables() []string { return eventliteTables }

// FileProblems checks the store's invariants on q (a database file's
// connection, read with ex) and lists what it found broken.
func (inner) FileProblems(ctx context.Context, ex driver.Executor, q driver.ReadQuerier) ([]string, error) {
	return invariantProblems(ctx, ex, q)
}

// CopyDriver is the driver that opens addr, and addr as an error may
// show it (a PostgreSQL address without its password).
func (inner) CopyDriver(addr string) (driver.Driver, string, error) { return chooseDriver(addr) }

// CopyExec is the store's executor: its engine's operations.
func (in inner) CopyExec() driver.Executor { return in.s.ex }

// CopyReader is the store's pool of read connections.
func (in inner) CopyReader() driver.ReadQuerier { return in.s.rdb }

// CopySnapshot begins a read-only transaction on the store's read pool
// that reads one snapshot from its first statement on. The caller rolls
// it back.
func (in inner) CopySnapshot(ctx context.Context) (*sql.Tx, error) {
	snap, err := in.s.rdb.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, mapErr(err)
	}
	if err := in.s.ex.StartSnapshot(ctx, snap); err != nil {
		_ = snap.Rollback()
		return nil, mapErr(err)
	}
	return snap, nil
}

// AnnounceForgotten appends the eventlite.subject.forgotten event of a
// subject that a restore or a copy forgot again in this store, as Forget
// appends it: the log the store was restored or copied from lacks the
// original one, and read models purge the subject on it.
func (in inner) AnnounceForgotten(ctx context.Context, tenant, subject string) error {
	a, err := in.s.prepareForget(tenant, subject)
	if err != nil {
		return err
	}
	if err := in.s.Update(ctx, func(tx *Tx) error {
		_, err := tx.appendPrepared(ctx, a)
		return err
	}); err != nil {
		return fmt.Errorf("append %s for subject %q (tenant %s): %w", typeSubjectForgotten, subject, tenant, err)
	}
	return nil
}
