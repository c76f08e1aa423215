package sqlshared

import (
	"context"
	"database/sql"
	"errors"

	"github.com/eventlite/eventlite/store/internal/driver"
)

// The erasure keys (crypto-shredding) and the scrubbing of what a
// forgotten key leaves. The rewriting of the event copies that the
// quarantine and its neighbours keep is each engine's own (EraseCopies:
// SQLite's JSON functions, PostgreSQL's rewrite in Go).

// AnyLiveKey asks erasure_keys for a key not forgotten.
func (Exec[D]) AnyLiveKey(ctx context.Context, q driver.ReadQuerier) (bool, error) {
	var ok bool
	err := q.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM erasure_keys WHERE forgotten_at IS NULL)`).Scan(&ok)
	return ok, err
}

// DataKey reads an erasure_keys row.
func (x Exec[D]) DataKey(ctx context.Context, q driver.ReadQuerier, tenant, subject string) (driver.DataKeyRow, bool, error) {
	var k driver.DataKeyRow
	var forgotten sql.NullInt64
	err := q.QueryRowContext(ctx, x.bind(`SELECT master_key_id, wrapped_key, forgotten_at FROM erasure_keys WHERE tenant = ? AND subject = ?`),
		tenant, subject).Scan(&k.MasterKeyID, &k.Wrapped, &forgotten)
	if errors.Is(err, sql.ErrNoRows) {
		return k, false, nil
	}
	k.Forgotten = forgotten.Valid
	return k, err == nil, err
}

// InsertDataKey inserts with ON CONFLICT DO NOTHING: on PostgreSQL a
// concurrent insert of the same key waits for the first one's
// transaction and then keeps its row.
func (x Exec[D]) InsertDataKey(ctx context.Context, q driver.Querier, tenant, subject string, masterKeyID, wrapped []byte, at int64) error {
	_, err := q.ExecContext(ctx, x.bind(`INSERT INTO erasure_keys (tenant, subject, master_key_id, wrapped_key, created_at)
		VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`), tenant, subject, masterKeyID, wrapped, at)
	return err
}

// ForgetDataKey clears the row in one UPDATE ... WHERE forgotten_at IS
// NULL, whose row lock (PostgreSQL) or the writer's lock (SQLite) makes
// the check and the destruction one step; when it changed nothing, an
// insert of a tombstone that does nothing on a row already there tells a
// forgotten key from none.
func (x Exec[D]) ForgetDataKey(ctx context.Context, q driver.Querier, tenant, subject string, at int64) (found, already bool, err error) {
	res, err := q.ExecContext(ctx, x.bind(`UPDATE erasure_keys SET master_key_id = NULL, wrapped_key = NULL, forgotten_at = ?
		WHERE tenant = ? AND subject = ? AND forgotten_at IS NULL`), at, tenant, subject)
	if err != nil {
		return false, false, err
	}
	if n, err := res.RowsAffected(); err != nil || n == 1 {
		return n == 1, false, err
	}
	// No live key: keep a tombstone (a subject of outside events) unless
	// a row (forgotten) is there.
	res, err = q.ExecContext(ctx, x.bind(`INSERT INTO erasure_keys (tenant, subject, created_at, forgotten_at) VALUES (?, ?, ?, ?)
		ON CONFLICT DO NOTHING`), tenant, subject, at, at)
	if err != nil {
		return false, false, err
	}
	n, err := res.RowsAffected()
	return n == 0, n == 0, err
}

// NewestForget reads MAX(forgotten_at) through the erasure_keys_forgotten
// index.
func (Exec[D]) NewestForget(ctx context.Context, q driver.ReadQuerier) (int64, error) {
	var newest int64
	err := q.QueryRowContext(ctx, `SELECT COALESCE(MAX(forgotten_at), 0) FROM erasure_keys WHERE forgotten_at IS NOT NULL`).Scan(&newest)
	return newest, err
}

// SubjectStreams reads the record of the subject's streams
// (erasure_streams) and, in case a row is missing from it, scans the
// tenant's events that have extensions: forgetting is rare.
func (x Exec[D]) SubjectStreams(ctx context.Context, q driver.ReadQuerier, tenant, subject string) ([]string, error) {
	d := x.dialect()
	rows, err := q.QueryContext(ctx, x.bind(`SELECT stream_id FROM erasure_streams WHERE tenant = ? AND subject = ?
		UNION SELECT stream_id FROM events
		WHERE tenant = ? AND `+d.HasExtensions()+` AND `+d.ErasureKey()+` = ?
		ORDER BY 1`), tenant, subject, tenant, subject)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var st string
		if err := rows.Scan(&st); err != nil {
			return nil, err
		}
		out = append(out, st)
	}
	return out, rows.Err()
}

// DropSubjectSnapshots deletes the stream's snapshots.
func (x Exec[D]) DropSubjectSnapshots(ctx context.Context, q driver.Querier, tenant, stream string) error {
	_, err := q.ExecContext(ctx, x.bind(`DELETE FROM snapshots WHERE tenant = ? AND stream_id = ?`), tenant, stream)
	return err
}

// EraseOutboxErrors finds the subject's events by their erasurekey.
func (x Exec[D]) EraseOutboxErrors(ctx context.Context, q driver.Querier, tenant, subject string) (int64, error) {
	d := x.dialect()
	res, err := q.ExecContext(ctx, x.bind(`UPDATE outbox SET last_error = ?
		WHERE last_error IS NOT NULL AND last_error <> '' AND last_error <> ? AND position IN (SELECT position FROM events
			WHERE tenant = ? AND `+d.HasExtensions()+` AND `+d.ErasureKey()+` = ?)`),
		driver.ErasedError, driver.ErasedError, tenant, subject)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// ScrubErased sets data to NULL where the event's key is forgotten.
func (Exec[D]) ScrubErased(ctx context.Context, q driver.Querier) (int64, error) {
	var d D
	r, err := q.ExecContext(ctx, `UPDATE events SET data = NULL
		WHERE data IS NOT NULL AND `+d.HasExtensions()+` AND `+d.ErasureKey()+` IS NOT NULL
		AND EXISTS (SELECT 1 FROM erasure_keys k WHERE k.tenant = events.tenant
			AND k.subject = `+d.ErasureKey()+` AND k.forgotten_at IS NOT NULL)`)
	if err != nil {
		return 0, err
	}
	return r.RowsAffected()
}

// MasterKeys groups the keys not forgotten by master key.
func (Exec[D]) MasterKeys(ctx context.Context, q driver.ReadQuerier) ([]driver.MasterKeyUse, error) {
	return driver.ReadMasterKeys(ctx, q)
}

// AnyMasterKey reads the first key not forgotten.
func (Exec[D]) AnyMasterKey(ctx context.Context, q driver.ReadQuerier) ([]byte, bool, error) {
	return driver.ReadAnyMasterKey(ctx, q)
}

// ForgottenSubjects lists the forgotten subjects.
func (Exec[D]) ForgottenSubjects(ctx context.Context, q driver.ReadQuerier) ([]driver.ForgottenKey, error) {
	return driver.ReadForgottenSubjects(ctx, q)
}
